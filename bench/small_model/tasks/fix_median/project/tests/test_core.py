from stats.core import mean, median, spread


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_median_odd():
    assert median([7, 1, 3]) == 3


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5
    assert median([10, 20]) == 15


def test_spread():
    assert spread([3, 9, 4]) == 6
