"""Analytic reference solutions, matching the C++ scenarios term for term.

Ball on slope ([zong2024convex], Zong et al., §VII-A, eq. 27): a rigid ball released at rest,
tangent to a rigid slope of angle θ, friction coefficient μ, gravity g. [zong2024convex]'s printed
eq. 27 writes the rolling branch as 5/14 g t²; the correct form is 5/14 g t² sinθ, which is
what this module and the C++ scenario use.

All functions accept numpy arrays (broadcast against each other) or scalars; angles are in
degrees, as in the run parameter ``slope_angle_deg``.
"""

import numpy as np

__all__ = [
    "rolling_threshold",
    "ball_on_slope_regime",
    "ball_on_slope_displacement",
    "ball_on_slope_velocity",
    "ball_on_slope_spin",
    "ball_on_slope_spin_ratio",
]


def rolling_threshold(slope_angle_deg):
    """Friction coefficient 2/7·tanθ above which the ball rolls without slipping [1]."""
    return 2.0 / 7.0 * np.tan(np.deg2rad(slope_angle_deg))


def _rolls(mu, slope_angle_deg):
    return np.asarray(mu, dtype=float) > rolling_threshold(slope_angle_deg)


def ball_on_slope_regime(mu, slope_angle_deg):
    """``"slip"`` for μ ≤ 2/7·tanθ, ``"roll"`` above (an array of strings for array input)."""
    regime = np.where(_rolls(mu, slope_angle_deg), "roll", "slip")
    return str(regime) if regime.ndim == 0 else regime


def _acceleration(mu, slope_angle_deg, gravity):
    """Acceleration of the centre of mass along the slope [m/s²]."""
    theta = np.deg2rad(slope_angle_deg)
    slip = gravity * (np.sin(theta) - np.asarray(mu, dtype=float) * np.cos(theta))
    roll = 5.0 / 7.0 * gravity * np.sin(theta)
    return np.where(_rolls(mu, slope_angle_deg), roll, slip)


def ball_on_slope_displacement(t, mu, slope_angle_deg, gravity=9.81):
    """Displacement u(t) [m] of the ball's centre of mass along the slope.

    [zong2024convex] §VII-A, eq. 27 with the sinθ correction of the rolling branch:
    slip (μ ≤ 2/7·tanθ): u = ½ g t² (sinθ − μ cosθ); roll: u = 5/14 g t² sinθ.
    """
    t = np.asarray(t, dtype=float)
    theta = np.deg2rad(slope_angle_deg)
    slip = 0.5 * gravity * t**2 * (np.sin(theta) - np.asarray(mu, dtype=float) * np.cos(theta))
    roll = 5.0 / 14.0 * gravity * t**2 * np.sin(theta)
    return np.where(_rolls(mu, slope_angle_deg), roll, slip)


def ball_on_slope_velocity(t, mu, slope_angle_deg, gravity=9.81):
    """Velocity v(t) = du/dt [m/s] of the centre of mass along the slope."""
    return _acceleration(mu, slope_angle_deg, gravity) * np.asarray(t, dtype=float)


def ball_on_slope_spin(t, mu, slope_angle_deg, radius, gravity=9.81):
    """Angular velocity ω(t) [rad/s] of the ball ([zong2024convex] §VII-A, companion of eq. 27).

    Slipping: the friction torque μ m g cosθ · r on I = 2/5 m r² gives ω = 5 μ g cosθ t / (2 r).
    Rolling: ω = v / r with v = 5/7 g t sinθ.
    """
    t = np.asarray(t, dtype=float)
    theta = np.deg2rad(slope_angle_deg)
    slip = 5.0 * np.asarray(mu, dtype=float) * gravity * np.cos(theta) * t / (2.0 * radius)
    roll = 5.0 / 7.0 * gravity * t * np.sin(theta) / radius
    return np.where(_rolls(mu, slope_angle_deg), roll, slip)


def ball_on_slope_spin_ratio(mu, slope_angle_deg):
    """Spin ratio ωr/v [1] of the ball for t > 0 (constant in time).

    Rolling: 1. Slipping: ω r / v = (5 μ g cosθ t / 2) / (g (sinθ − μ cosθ) t)
    = 2.5 μ cosθ / (sinθ − μ cosθ), which is 0 without friction and below 1 up to the
    threshold (it reaches 1 exactly at μ = 2/7·tanθ).
    """
    theta = np.deg2rad(slope_angle_deg)
    mu = np.asarray(mu, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):  # the slip branch where μ ≥ tanθ
        slip = 2.5 * mu * np.cos(theta) / (np.sin(theta) - mu * np.cos(theta))
    return np.where(_rolls(mu, slope_angle_deg), 1.0, slip)
