TRACKS = {1: "Intro", 2: "Ballad", 3: "Reprise", 5: "Finale", 8: "Encore", 13: "Hidden"}


def title(track_id):
    return TRACKS.get(track_id, f"#{track_id}")
