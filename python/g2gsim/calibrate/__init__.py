"""Calibration and validation of machine files (issue 6): see docs/calibration.md."""
