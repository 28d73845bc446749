DEFAULTS = {
    "server": {"host": "127.0.0.1", "port": 8000, "tls": {"enabled": False, "cert": None}},
    "log": {"level": "info", "format": "text"},
    "workers": 2,
}
