"""What every demo tab's Gradio functions share: errors shown to the user and the progress bar.

A tab (a task's ``demo.py``, ``tab(models, examples)``) wraps each of its event handlers in :func:`user_errors` and
hands its long-running handler :func:`reporter` of the event's ``gr.Progress``. This module imports Gradio and no
tab, so the tabs import it without importing :mod:`vision.demo.app`, which builds them.
"""

from __future__ import annotations

import html
import logging
import os
from functools import wraps
from typing import Any, Callable

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # a tab imported on its own (as tests do) sends no analytics

try:
    import gradio as gr
except ImportError as exc:  # the demo extra is not installed
    raise ImportError("the demo needs Gradio, from the 'demo' extra: pip install -e '.[demo]' (or make demo)") from exc

from vision.errors import VisionError  # noqa: E402

__all__ = ["user_errors", "reporter"]

log = logging.getLogger("vision.demo")


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a VisionError into a gr.Error (its message shown to the user); other errors get a short message and
    their traceback goes to the server log only."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except VisionError as exc:  # messages may quote file names: shown as text, not HTML
            raise gr.Error(html.escape(str(exc), quote=False), print_exception=False) from None
        except Exception as exc:  # a bug, not the user's fault: keep the trace in the server log
            log.exception("unexpected error in %s", fn.__name__)
            raise gr.Error(f"unexpected error ({type(exc).__name__}); the server log has the details",
                           print_exception=False) from None

    return wrapper


def reporter(progress: gr.Progress) -> Callable[[float, str], None]:
    """``progress(fraction, description)`` of the handlers (:data:`vision.demo.handlers.Progress`) on a Gradio
    progress bar."""
    return lambda fraction, description: progress(fraction, desc=description)
