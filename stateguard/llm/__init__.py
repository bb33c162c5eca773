"""Language-model backends (local serving and clients)."""

from stateguard.llm.client import ChatResult, ContextOverflow, LLMClient, LLMError, Usage
from stateguard.llm.endpoints import EndpointConfig, EndpointConfigError, Role

__all__ = [
    "ChatResult",
    "ContextOverflow",
    "EndpointConfig",
    "EndpointConfigError",
    "LLMClient",
    "LLMError",
    "Role",
    "Usage",
]
