"""The JSON shapes of the HTTP API.

Requests are strict: unknown fields, empty or oversized text and malformed ids
answer 422 with a message that names the field. Answers are built from the
domain types by each model's `of`.
"""

from ..domain import StatusFilter
from ..shapes import ArmPublic, Id, UtcTime
from .agents import AgentCreate, AgentDeleted, AgentPublic, AgentUpdate
from .base import Page, Request
from .conversations import ConversationPublic, ConversationSummaryPublic, ConversationUpdate, MessagePublic
from .facts import (
    AuditReportPublic,
    EventPublic,
    FactCreate,
    FactPublic,
    FactUpdate,
    HitPublic,
    ReasonBody,
    RecallsPublic,
    SearchRequest,
    SearchResults,
    SourcePublic,
    StaleList,
)
from .jobs import JobPublic, MessageIn, TurnCreate, TurnPublic, TurnResult
from .people import (
    AdminSettings,
    AdminSettingsUpdate,
    KeyCreate,
    KeyCreated,
    KeyPublic,
    MemberPublic,
    MePublic,
    MeSettingsUpdate,
    UserCreate,
    UserCreated,
    UserPublic,
    UserUpdate,
)
from .usage import BudgetUpdate, DayTokens, MemberUsage, UsagePublic

__all__ = [
    "AdminSettings",
    "AdminSettingsUpdate",
    "AgentCreate",
    "AgentDeleted",
    "AgentPublic",
    "AgentUpdate",
    "ArmPublic",
    "AuditReportPublic",
    "BudgetUpdate",
    "ConversationPublic",
    "ConversationSummaryPublic",
    "ConversationUpdate",
    "DayTokens",
    "EventPublic",
    "FactCreate",
    "FactPublic",
    "FactUpdate",
    "HitPublic",
    "Id",
    "JobPublic",
    "KeyCreate",
    "KeyCreated",
    "KeyPublic",
    "MePublic",
    "MeSettingsUpdate",
    "MemberPublic",
    "MemberUsage",
    "MessageIn",
    "MessagePublic",
    "Page",
    "ReasonBody",
    "RecallsPublic",
    "Request",
    "SearchRequest",
    "SearchResults",
    "SourcePublic",
    "StaleList",
    "StatusFilter",
    "TurnCreate",
    "TurnPublic",
    "TurnResult",
    "UsagePublic",
    "UserCreate",
    "UserCreated",
    "UserPublic",
    "UserUpdate",
    "UtcTime",
]
