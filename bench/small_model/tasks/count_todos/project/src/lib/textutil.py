def shorten(text, width):
    # TODO: do not cut words in half
    return text[:width]


def words(text):
    return text.split()  # TODO: punctuation
