from .report import describe_room

__all__ = ["describe_room"]
