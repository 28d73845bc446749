from taglist import Playlist


def test_each_once():
    playlist = Playlist()
    playlist.queue(1, 2, 2, 1)
    assert sorted(playlist.order()) == [1, 2]


def test_titles():
    playlist = Playlist()
    playlist.queue(1, 99)
    assert sorted(playlist.titles()) == ["#99", "Intro"]
