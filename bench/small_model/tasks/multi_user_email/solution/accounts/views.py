def describe(user):
    """One line for a user, as the reports print it."""
    return f"{user.name} ({user.age}) <{user.email}>"
