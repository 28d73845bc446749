# The task trees hold documents (and a script) of their own: the repository's pytest run collects only
# test_documents.py here.
collect_ignore_glob = ["*/workspace/*", "*/hidden/*", "*/solution/*"]
