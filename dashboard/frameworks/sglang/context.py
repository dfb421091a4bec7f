"""SGLang's context-length refusal (SGLang 0.5.23 ``model_config.py``): the message and where it is raised.

The derivation of the limit from ``config.json`` is :func:`dashboard.context.derive_limits` (catalog
column ``context_length_sglang``). Pure, no I/O.
"""

from __future__ import annotations

from typing import Any

SGLANG_RAISE_SITE = "python/sglang/srt/configs/model_config.py:1314"
SGLANG_RELEASE = "0.5.23"
#: (raise site, release, source URL) of the refusal.
RAISE_SITE_INFO = (SGLANG_RAISE_SITE, SGLANG_RELEASE,
                   f"https://github.com/sgl-project/sglang/blob/v{SGLANG_RELEASE}/{SGLANG_RAISE_SITE.replace(':', '#L')}")


def sglang_message(context_len: int, derived: int | None) -> str:
    """SGLang's ``ValueError`` text for ``--context-length context_len`` above the derived length ('' when
    it starts or the length is unknown), exactly as ``_derive_context_length`` builds it
    (``model_config.py:1297-1316``, SGLang 0.5.23); raised at :data:`SGLANG_RAISE_SITE`."""
    if derived is None or not context_len > derived:
        return ""
    msg = (f"Warning: User-specified context_length ({context_len}) is greater than the derived context_length "
           f"({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the derived "
           "context_length may differ from max_position_embeddings in the model's config.")
    return f"{msg} To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"


def context_message(context_len: int, derived: float | None, record: Any) -> str:
    """:func:`sglang_message` for a catalog record whose limit ``derived`` (tokens) was read from
    ``context_length_sglang``."""
    return sglang_message(context_len, None if derived is None else int(derived))
