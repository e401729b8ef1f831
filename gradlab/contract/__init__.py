"""The contract: how modules register, the kinds, the cfg, the checks' declaration and the records every front end reads."""
