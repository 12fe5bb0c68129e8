"""Ball on slope analytic solution ([zong2024convex] §VII-A, eq. 27 with the sinθ correction)."""

import math

import numpy as np
import pytest

from analysis.analytic import (ball_on_slope_displacement, ball_on_slope_regime,
                               ball_on_slope_spin, ball_on_slope_spin_ratio,
                               ball_on_slope_velocity, rolling_threshold)


@pytest.mark.parametrize("mu, coefficient, regime", [
    (0.0, 3.4684, "slip"), (0.2, 2.7747, "slip"), (0.3, 2.4774, "roll"), (0.6, 2.4774, "roll"),
])
def test_displacement_coefficients_at_45_degrees(mu, coefficient, regime):
    t = np.array([0.0, 0.5, 1.0, 2.0])
    u = ball_on_slope_displacement(t, mu, 45.0, 9.81)
    assert round(float(u[2]), 4) == coefficient
    np.testing.assert_allclose(u, u[2] * t**2, rtol=1e-15)
    assert ball_on_slope_regime(mu, 45.0) == regime


def test_rolling_threshold_is_two_sevenths_tan_theta():
    for angle in (10.0, 30.0, 45.0, 60.0):
        # math.tan (libm) and np.tan (numpy's own SIMD loops on some CPUs) may differ in the
        # last bit, so the two computations agree to a few ulps, not to the bit.
        expected = 2.0 / 7.0 * math.tan(math.radians(angle))
        threshold = float(rolling_threshold(angle))
        assert threshold == pytest.approx(expected, rel=1e-13)
        # The regime flips at analysis.analytic's own threshold: probed a relative 1e-9 to
        # either side (far above round-off, far below any formula error), never on it.
        assert ball_on_slope_regime(threshold * (1.0 - 1e-9), angle) == "slip"
        assert ball_on_slope_regime(threshold * (1.0 + 1e-9), angle) == "roll"


def test_displacement_is_continuous_at_the_threshold():
    t = np.linspace(0.0, 1.0, 11)
    for angle in (20.0, 45.0, 70.0):
        threshold = float(rolling_threshold(angle))
        at = ball_on_slope_displacement(t, threshold, angle)
        above = ball_on_slope_displacement(t, np.nextafter(threshold, 1.0), angle)
        np.testing.assert_allclose(at, above, rtol=1e-12, atol=0.0)
        np.testing.assert_allclose(at, 5.0 / 14.0 * 9.81 * t**2 * math.sin(math.radians(angle)),
                                   rtol=1e-12)


def test_spin_ratio_when_slipping():
    t, radius = np.array([0.1, 0.5, 1.0]), 0.1
    omega = ball_on_slope_spin(t, 0.2, 45.0, radius)
    v = ball_on_slope_velocity(t, 0.2, 45.0)
    np.testing.assert_allclose(omega * radius / v, 0.625, rtol=1e-12)


def test_spin_is_v_over_r_when_rolling():
    t, radius = np.array([0.1, 0.5, 1.0]), 0.1
    omega = ball_on_slope_spin(t, 0.6, 45.0, radius)
    np.testing.assert_allclose(omega * radius, ball_on_slope_velocity(t, 0.6, 45.0), rtol=1e-12)
    np.testing.assert_allclose(omega * radius, 5.0 / 7.0 * 9.81 * t * math.sin(math.pi / 4),
                               rtol=1e-12)


def test_spin_ratio_is_spin_times_radius_over_velocity():
    t, radius = 0.7, 0.1
    mu = np.array([0.0, 0.1, 0.2, 0.3, 0.6, 2.0])
    spin, velocity = ball_on_slope_spin(t, mu, 45.0, radius), ball_on_slope_velocity(t, mu, 45.0)
    expected = spin * radius / velocity
    np.testing.assert_allclose(ball_on_slope_spin_ratio(mu, 45.0), expected, rtol=1e-12)
    np.testing.assert_allclose(ball_on_slope_spin_ratio(mu, 45.0)[[0, 2, 3, 4, 5]],
                               [0.0, 0.625, 1.0, 1.0, 1.0], rtol=1e-12)
    # Continuous at the threshold: the slip branch reaches 1 there.
    threshold = float(rolling_threshold(30.0))
    below = float(ball_on_slope_spin_ratio(threshold * (1.0 - 1e-9), 30.0))
    assert below == pytest.approx(1.0, rel=1e-6)


def test_vectorized_over_mu():
    mu = np.array([0.0, 0.2, 0.3, 0.6])
    u = ball_on_slope_displacement(1.0, mu, 45.0)
    np.testing.assert_allclose(u, [3.46836, 2.77469, 2.47740, 2.47740], atol=1e-5)
    assert list(ball_on_slope_regime(mu, 45.0)) == ["slip", "slip", "roll", "roll"]
