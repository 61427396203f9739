"""`python -m reports census`: a package's own tests and the harness's sweeps at each release,
plainly and on the simulated device; what fails only simulated, grouped by cause, with its
releases and what upstream knows of it."""
