# How long a session lasts without activity, in minutes (product requirement: half an hour).
SESSION_MINUTES = 30
