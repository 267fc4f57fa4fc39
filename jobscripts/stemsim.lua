-- Lmod module file for an installed stemsim (cmake --install build --prefix <prefix>).
-- Copy to <modulefiles>/stemsim/<version>.lua and set `prefix` to the install prefix.
-- stemsim finds its scattering tables under <prefix>/share/stemsim/data by itself;
-- STEMSIM_KIRKLAND / STEMSIM_LOBATO override them when set.
whatis("stemsim: MPI/GPU simulator of STEM, 4D-STEM and HRTEM images (multislice, PRISM)")
help([[
stemsim config.ini                      one run (see stemsim --help, --help-config)
mpirun -np 64 stemsim config.ini        MPI ranks (Slurm: srun, see share/stemsim/jobscripts)
stemsim --version                       the build: GPU engine, MPI, HDF5, FFTW
Examples: $STEMSIM_HOME/share/stemsim/examples; job scripts: $STEMSIM_HOME/share/stemsim/jobscripts
]])

local prefix = "/opt/stemsim/0.1.0"
-- The MPI, parallel HDF5 and FFTW stemsim was built against (the installed binary keeps
-- their library paths in its RUNPATH, so these are for mpirun and the tools beside it).
-- Set the names to your site's modules; `stemsim --version` prints the versions it was built with.
depends_on("openmpi")
depends_on("hdf5")
depends_on("fftw")

setenv("STEMSIM_HOME", prefix)
prepend_path("PATH", pathJoin(prefix, "bin"))
