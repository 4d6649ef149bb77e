def handle(args):
    print("users")  # TODO: list real users
    return 0
