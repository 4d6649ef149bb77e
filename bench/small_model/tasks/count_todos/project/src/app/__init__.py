# TODO: expose a version string
