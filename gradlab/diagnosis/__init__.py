"""Naming the cause of a failure: known-buggy variants run on the student's numbers."""
