"""Turning a run's outcomes into files people and CI read: results JSON, JUnit XML, HTML."""
