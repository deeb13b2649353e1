"""One Settings object: environment (MNEMO_*), then an optional TOML file, then defaults.

Read once by the entry point (CLI, server) and passed down; nothing reads the
environment at import time.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import platformdirs
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from .domain import MAX_TOKEN_BUDGET, Category, MemoryMode
from .setting_names import UnknownSetting, unknown_settings

# where a chat model named without a base URL is asked: OpenAI's API
OPENAI_BASE_URL = "https://api.openai.com/v1"


class UnknownSettings(ValueError):
    """MNEMO_* variables or TOML keys that are no setting (see mnemo.setting_names)."""

    def __init__(self, unknown: list[UnknownSetting]) -> None:
        super().__init__("; ".join(map(str, unknown)))
        self.unknown = unknown


class RecallSettings(BaseModel):
    """The weights, rrf_k and the arms' depths are the ones bench/fusion.py chose by
    cross-validation (LoCoMo, LongMemEval_S, the multilingual set; every fold chose
    recency 0 and rrf_k 10). The recency arm is off by default: at weight 0 it still
    runs, but its facts move nothing up and only fill places no other arm claims
    (they score 0, after every other hit). A positive weight turns it on again."""

    recency_days: float = 7.0  # the recency arm: facts said within this many days
    recency_k: int = 10  # the recency arm's depth: its most recent facts taken
    semantic_k: int = 20  # the semantic arm's depth: its nearest facts taken (fusion: rrf)
    semantic_floor: float = 0.2  # cosine; below it a "nearest" fact is noise
    lexical_k: int = 40  # the lexical (full-text) arm's depth
    # each arm's weight in reciprocal-rank fusion (ranker "rrf"); an arm at 0 only fills places
    weights: dict[str, float] = Field(
        default_factory=lambda: {"semantic": 1.0, "lexical": 0.75, "recency": 0.0, "time": 1.0}
    )
    # The "time" arm runs only for a query that names a time ("last month", "in 2022":
    # recall/when.py): of the facts said or become true then (the latest time_k said),
    # those nearest the query.
    time_k: int = Field(default=200, ge=1, le=10_000)
    # The "topic" arm repeats the semantic search with the query's names taken out
    # (recall/names.py, without_names); it runs only for a query that names
    # someone, and then takes this share of the semantic weight.
    topic_share: float = Field(default=0.5, ge=0.0, le=1.0)
    rrf_k: float = 10.0  # reciprocal-rank fusion's constant: 1 / (rrf_k + rank)
    # "learned": the arms' candidates (each arm to candidate_k, no similarity floor) are ordered by
    # the model shipped in mnemo/recall/ranker.json (bench/ranker.py trains it; its card is
    # RANKER.md beside it); "rrf": reciprocal-rank fusion with the weights above, the fallback
    ranker: Literal["learned", "rrf"] = "learned"
    candidate_k: int = Field(default=40, ge=1, le=1000)  # each arm's depth for the learned ranker
    # the learned ranker's first places are spread over conversations: each fact already placed
    # from a conversation lowers the others of that conversation by this many standard deviations
    # of the scores (bench/ranker.py chose it out of fold; 0: by score alone)
    session_spread: float = Field(default=0.25, ge=0.0, le=10.0)
    max_facts: int = 20  # facts given to an assistant at most, per recall
    max_tokens: int = 1000  # and at most this many tokens of them (the memory block's size)
    # where the chat proxy puts the memory block: in the system message (every chat template
    # takes it), or as a user message before the person's latest (keeps prompt caches warm)
    placement: Literal["system", "before_user"] = "system"


class WriteSettings(BaseModel):
    exchanges: int = 2  # how many (user, assistant) exchanges the extractor sees
    related_k: int = 5  # existing facts fetched per new fact, per arm
    related_floor: float = 0.45  # cosine below which a neighbour is not related
    # The same search by the fact's topic question ("Where do I live?"). A question
    # sits further from its answers than two statements do (MiniLM: 0.33–0.58 for
    # "…my home?" / "I live in Aarhus"), so its floor is lower.
    topic_floor: float = 0.25
    # The same search by the generic form of the fact a change replaces, its value left
    # open ("My home is some city" for "I moved to Porto"). bench/correction.py (MiniLM,
    # 10k facts): the stale fact is among its 5 nearest and at or above 0.35 for 84.5% of
    # changes (0.45: 69.1%), with 3.0 other facts shown; 0.3 (87.3%, 3.9 shown) finds no
    # stale fact the other searches miss.
    replaces_floor: float = 0.35
    # At or above, and with the same numbers and negations: the same fact restated.
    # MiniLM puts "I drink coffee every morning" / "I drink a coffee every morning"
    # at 0.99 but also "…an engineer" / "…a senior engineer" at 0.96, so the bar is
    # high; below it, a chat model decides (its "noop" reinforces).
    duplicate_similarity: float = 0.97
    max_new_facts: int = 20  # per turn; the rest is dropped and reported
    max_changes_to_existing: int = 3  # updates, supersedes, retractions per turn
    guarded_min_confidence: float = (
        0.75  # the review policy "guarded" holds what the extractor is less sure of
    )
    # tokens the chat model may spend learning for one user in a UTC day (None: no limit);
    # the administrator may give a user their own (`mnemo users budget`)
    daily_token_budget: int | None = Field(default=None, ge=0, le=MAX_TOKEN_BUDGET)


class JobSettings(BaseModel):
    lease_seconds: float = 120.0  # a claimed job is given to another worker after this
    max_attempts: int = 5  # tries of a turn before it is failed for good (Retry on Activity tries again)
    backoff_seconds: float = 5.0  # doubled after every failed attempt
    poll_seconds: float = 1.0  # how often an idle worker looks for a due turn
    # turns of one person waiting to be learnt from (queued, in hand or over budget) past which
    # a new one is refused with 429 and Retry-After, nothing stored; 0: no limit. Workers take
    # people in turn whatever this is (the one served longest ago first).
    max_queued_per_user: int = Field(default=500, ge=0)


class HealthSettings(BaseModel):
    """/readyz and the workers' heartbeats (see mnemo/health.py)."""

    heartbeat_seconds: float = Field(default=15.0, gt=0)  # a worker writes its heartbeat this often
    # a worker is alive while its last heartbeat is younger than this
    worker_stale_seconds: float = Field(default=60.0, gt=0)
    # None: a live worker is required when the server runs its own (MNEMO_WORKER, the default)
    require_worker: bool | None = None
    model_check_seconds: float = Field(default=60.0, ge=0)  # how long the chat model's check is kept
    model_timeout_seconds: float = Field(default=5.0, gt=0)  # how long the chat model's check may take


class AuthLimitSettings(BaseModel):
    """Failed authentications per client address and per key id (mnemo/auth.py). Counted in
    each server process's own memory: processes behind a load balancer count apart, and a restart
    forgets."""

    # past this many wrong keys within the window, a wrong key from that address or for that key id
    # is answered 429 until the oldest ages out (a right key never is); 0: no limit
    failures: int = Field(default=20, ge=0)
    window_seconds: float = Field(default=60.0, gt=0)  # the window those failures are counted in
    # addresses tracked at once, and as many key ids; the stalest go first
    max_addresses: int = Field(default=10_000, ge=1)


# Each embedding model puts its cosines in a range of its own: for all-MiniLM-L6-v2 two
# unrelated facts are near 0.1 and a restatement near 0.99, for multilingual-e5-small they are
# near 0.82 and 0.99 (and "my sister…" / "my brother…" at 0.97). The floors above are MiniLM's
# (and those of any model not named here); a model named here brings its own, each used
# unless the setting is given (MNEMO_WRITE__RELATED_FLOOR=…). e5's, from its cosines on
# bench/facts.py's sentences and bench/data/multilingual.jsonl: the query floors keep every
# right answer of the multilingual set (lowest 0.750); the statement floors sit near MiniLM's
# by quantile (0.45 -> 0.89 at the same share of pairs), lowered so that "I moved to Porto"
# still finds "I live in Lisbon" (0.87); the duplicate bar sits above the closest different
# facts measured (0.973) and below restatements (0.989-0.998).
MODEL_FLOORS: dict[str, dict[str, dict[str, float]]] = {
    "multilingual-e5-small-q4": {
        "recall": {"semantic_floor": 0.74},
        "write": {
            "related_floor": 0.85,
            "topic_floor": 0.74,
            "replaces_floor": 0.82,
            "duplicate_similarity": 0.985,
        },
    },
}


Part = TypeVar("Part", bound=BaseModel)


def with_floors(settings: Part, part: str, model_name: str) -> Part:
    """`settings` (the "recall" or "write" part) with the model's floors where none was given."""
    floors = MODEL_FLOORS.get(model_name, {}).get(part, {})
    return settings.model_copy(
        update={name: v for name, v in floors.items() if name not in settings.model_fields_set}
    )


Days = Annotated[int, Field(ge=0, le=36_500)]


class StaleSettings(BaseModel):
    """For each category, the days a fact may go neither said again nor recalled before the
    "Still true?" list offers it (MNEMO_STALE__PLAN=30); 0: never. Nothing ends because of
    age: the person keeps it (the clock starts again), ends it or erases it."""

    identity: Days = 0  # who someone is rarely stops being true
    preference: Days = 365  # what someone likes: a year
    relationship: Days = 730  # who is who to someone: two years
    event: Days = 0  # something that happened stays so
    plan: Days = 90  # what someone means to do: a season
    instruction: Days = 365  # how someone wants to be answered: a year
    other: Days = 180  # the rest: half a year

    def before(self, now: datetime) -> dict[Category, datetime]:
        """Each category that goes stale, and the time before which a fact of it has."""
        return {c: now - timedelta(days=days) for c in Category if (days := getattr(self, c.value))}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_", env_nested_delimiter="__", extra="ignore")

    # where the SQLite database, the receipts' signing key and other files live (default: the
    # platform's data directory, ~/.local/share/mnemo on Linux)
    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("mnemo")))
    # postgresql://… for PostgreSQL (or a Citus coordinator); unset: SQLite in the data directory
    database_url: str | None = None
    user: str = "local"  # the person the command line and `mnemo mcp` act for (by name)
    # the server's memory mode: disabled (off for everyone), enabled_default_off, enabled_default_on;
    # unset: on (each person's own switch decides); the administrator may set it at runtime
    memory_mode: MemoryMode | None = None

    # the OpenAI-compatible chat model that learns facts from conversations (base URL, key,
    # model name, seconds per call); unset: only what a person asks to remember is learnt
    llm_base_url: str | None = None
    llm_api_key: str = "not-needed"  # the chat model's API key
    llm_model: str | None = None  # the chat model's name
    llm_timeout: float = 60.0  # seconds a learning call may take

    # an OpenAI-compatible embeddings endpoint instead of the local embedder (base URL, key, model)
    embed_base_url: str | None = None
    embed_api_key: str = "not-needed"  # the embeddings endpoint's API key
    embed_model: str | None = None  # the embeddings model's name
    # The local embedder, when no endpoint is set: all-MiniLM-L6-v2 reads English (fast); e5
    # reads about a hundred languages and across them, at about three times the time to embed a
    # fact and twice a question's. A store changes model with `mnemo reindex`.
    embed_local: Literal["minilm", "multilingual-e5"] = "minilm"
    # A second local embedder whose cosine of each recall's candidates with the question the
    # ranker reads beside MiniLM's (only beside the local MiniLM): out of fold on LongMemEval it
    # puts 0.916 of the answer turns among the first 10 against 0.900, at the
    # cost of a second vector a fact (written in the background, about five times MiniLM's time
    # to embed one) and about twice the recall time (docs/benchmarks.md, "Two embedders").
    # Unset: one embedder.
    embed_second: Literal["multilingual-e5"] | None = None

    # The model the chat proxy forwards conversations to. Each unset field falls
    # back to its llm_* twin (see _upstream_defaults): one model for chatting and
    # extracting is the common case, but a big chat model with a small, cheap
    # extractor is just as valid.
    upstream_base_url: str | None = None
    upstream_api_key: str | None = None  # the upstream's API key (unset: llm_api_key)
    upstream_model: str | None = None  # the model asked when a request names none (unset: llm_model)
    # Seconds the upstream may stay silent (before its reply, between streamed
    # chunks); 600, as the OpenAI client's own default, so mnemo is never the
    # one that gives up first on a long generation.
    upstream_timeout: float = 600.0

    host: str = "127.0.0.1"  # the address `mnemo serve` listens on (0.0.0.0: every interface)
    port: int = 8420  # the port `mnemo serve` listens on
    # the administrator's key: the admin API and the page at /admin (unset: no administrator)
    admin_key: str | None = None
    # a key that reads /metrics and nothing else (the admin key reads it too)
    metrics_key: str | None = None
    # Addresses or networks of the reverse proxies whose X-Forwarded-For (and -Proto) name the
    # client; comma-separated in the environment. Empty: the headers are ignored, so no client
    # can choose the address that its failed keys count against.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    max_body_bytes: int = 1_000_000  # a request body past this many bytes is refused with 413
    # Clients that send slowly (http/timeouts.py): a request's headers, and each part of its
    # body, must come within the read timeout; the whole body within the body timeout, which for
    # a body at the default limit (1 MB) asks for about 8 KB/s.
    read_timeout_seconds: float = Field(default=30.0, gt=0)
    body_timeout_seconds: float = Field(default=120.0, gt=0)  # the whole body's deadline
    worker: bool = True  # run the extraction worker inside the server
    # How the server, a worker and `mnemo mcp` write their log: lines of text, or one JSON
    # object a line (`--json` on those commands) for a log collector
    log_format: Literal["text", "json"] = "text"
    # Days the recall log (which assistant was given which fact, when) is kept; 0 keeps none.
    recall_log_days: int = Field(default=30, ge=0, le=36_500)

    recall: RecallSettings = Field(default_factory=RecallSettings)
    write: WriteSettings = Field(default_factory=WriteSettings)
    jobs: JobSettings = Field(default_factory=JobSettings)
    auth_limit: AuthLimitSettings = Field(default_factory=AuthLimitSettings)
    health: HealthSettings = Field(default_factory=HealthSettings)
    stale: StaleSettings = Field(default_factory=StaleSettings)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxy_list(cls, value: Any) -> Any:
        return (
            [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value
        )

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_addresses(cls, value: list[str]) -> list[str]:
        for proxy in value:
            try:
                ipaddress.ip_network(proxy)
            except ValueError as exc:
                raise ValueError(f"{proxy!r} is not an IP address or network (such as 10.0.0.0/8)") from exc
        return value

    @model_validator(mode="after")
    def _second_beside_minilm(self) -> Settings:
        # the ranker that reads a second embedder's cosines was trained beside MiniLM's
        if self.embed_second is not None and (self.embed_base_url or self.embed_local != "minilm"):
            raise ValueError(
                "embed_second reads beside the local all-MiniLM-L6-v2 only: unset embed_base_url and"
                " embed_local (MNEMO_EMBED_BASE_URL, MNEMO_EMBED_LOCAL), or unset embed_second"
            )
        return self

    @model_validator(mode="after")
    def _upstream_defaults(self) -> Settings:
        if self.llm_model and self.llm_base_url is None:
            self.llm_base_url = OPENAI_BASE_URL
        if self.upstream_base_url is None:
            self.upstream_base_url = self.llm_base_url
        if self.upstream_api_key is None:
            self.upstream_api_key = self.llm_api_key
        if self.upstream_model is None:
            self.upstream_model = self.llm_model
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = init_settings.init_kwargs.pop("_toml_file", None)  # type: ignore[attr-defined]
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    @classmethod
    def load(cls, config_file: Path | None = None, *, strict: bool = True, **overrides: Any) -> Settings:
        """Settings from overrides, then MNEMO_* variables, then the TOML file, then defaults.

        `strict`: UnknownSettings for a MNEMO_* variable or TOML key that is no setting.
        """
        if config_file is not None and not config_file.is_file():
            raise FileNotFoundError(f"config file not found: {config_file}")
        if strict and (unknown := cls.unknown(config_file)):
            raise UnknownSettings(unknown)
        clean = {k: v for k, v in overrides.items() if v is not None}
        # _toml_file is no field: settings_customise_sources takes it out of the init keywords
        return cls(_toml_file=config_file, **clean)  # type: ignore[call-arg]

    @classmethod
    def unknown(cls, config_file: Path | None = None) -> list[UnknownSetting]:
        """The MNEMO_* variables of this process, and the keys of the TOML file, that are no setting."""
        toml = tomllib.loads(config_file.read_text(encoding="utf-8")) if config_file else None
        return unknown_settings(cls, os.environ, toml, str(config_file))

    def for_model(self, model_name: str) -> Settings:
        """These settings with `model_name`'s own similarity floors (MODEL_FLOORS) wherever
        none was given."""
        parts = {part: with_floors(getattr(self, part), part, model_name) for part in ("recall", "write")}
        return self.model_copy(update=parts)

    @property
    def database_path(self) -> Path:
        return self.data_dir / "mnemo.db"
