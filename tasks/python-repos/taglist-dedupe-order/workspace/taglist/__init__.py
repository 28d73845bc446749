from .playlist import Playlist

__all__ = ["Playlist"]
