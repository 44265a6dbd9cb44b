"""Test doubles that run as real local servers (used by the test suite and demos)."""
