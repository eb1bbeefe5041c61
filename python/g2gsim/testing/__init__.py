"""Helpers for tests and benchmarks, not for users: ``otf2_synth`` writes synthetic OTF2 archives
(Score-P style, with the tracer's attributes) whose content is known exactly."""
