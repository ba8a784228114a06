"""Outputs for people: tables, charts and the HTML report built from run and store results."""
