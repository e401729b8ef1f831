"""The front ends: the gradlab command, the pytest plugin, the HTML report."""
