from .report import summarize_text

__all__ = ["summarize_text"]
