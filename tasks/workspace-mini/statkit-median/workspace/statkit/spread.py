"""Measures of spread, built on the central ones."""
import math

from .central import mean


def variance(values):
    values = list(values)
    centre = mean(values)
    return sum((v - centre) ** 2 for v in values) / len(values)


def stdev(values):
    return math.sqrt(variance(values))
