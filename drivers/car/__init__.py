"""Car drivers: the VESC motor controller (motor and steering servo) and the car's IMU."""
