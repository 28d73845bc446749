from taglist import Playlist
from taglist.unique import unique


def test_first_queued_order():
    playlist = Playlist()
    playlist.queue(8, 3, 5, 3, 1, 8)
    assert playlist.order() == [8, 3, 5, 1]
    assert playlist.titles() == ["Encore", "Reprise", "Finale", "Intro"]


def test_unique_keeps_first_positions():
    assert unique([13, 2, 13, 1, 2]) == [13, 2, 1]


def test_empty():
    assert Playlist().order() == []
