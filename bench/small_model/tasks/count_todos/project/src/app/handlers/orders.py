def handle(args):
    # TODO: paginate
    # TODO: filter by status
    for n in range(3):
        print(f"order {n}")
    return 0  # todo later: exit codes
