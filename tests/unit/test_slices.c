/* Slices that fit the cell (src/plan.c stem_slice_count) and a thinner last slice:
 *  - counts: a cell within 1e-4 of a slice of N slices gets N (GaAs [110], 47.969841 A in
 *    slices of 1.998743 A: 24, not 25; 10.000001 A in slices of 2: 5); otherwise the last
 *    slice is thinner (9 A in slices of 2: 5, the last 1 A), and the plan says so;
 *  - physics in vacuum, against the closed-form Fresnel propagator exp(-i pi lambda q^2 T)
 *    over exactly T = 9 A: a probe (multislice's propagation), a tilted plane wave (hrtem's
 *    exit wave) and every plane wave of PRISM's S-matrix;
 *  - atoms (Si and Au, one in the last slice), infinite and finite projection: the same
 *    transmission functions in a 9 A and a 10 A cell, and the exit wave of the 9 A cell (last
 *    slice 1 A) propagated by a further 1 A of vacuum equals that of the 10 A cell (5 full
 *    slices), to 1e-3 of what the last 1 A changes. */
#include "hrtem.h"
#include "probe.h"
#include "sim.h"

static const char *vacuum_xyz = "vacuum: one H atom of occupancy 0\n10.86 10.86 9\n1 5.43 5.43 2.7 0.0 0.0\n";

static void test_counts(void)
{
    static const struct {
        double cell, dz;
        int n;
        double last;
    } cases[] = {
        {47.969841, 1.998743, 24, 1.998743}, /* GaAs [110] from a 6-decimal file: 24.0000045 slices */
        {10.000001, 2, 5, 2},
        {9.99999, 2, 5, 2},
        {10, 2, 5, 2},
        {9, 2, 5, 1},
        {9.9996, 2, 5, 1.9996}, /* 2e-4 of a slice short: a thinner last slice */
        {0.5, 2, 1, 0.5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double last = 0;
        int n = stem_slice_count(cases[i].cell, cases[i].dz, &last);
        CHECK_MSG(n == cases[i].n && fabs(last - cases[i].last) <= 1e-9,
                  "cell %.9g in slices of %.9g: %d slices, the last %.9g (expected %d, %.9g)", cases[i].cell,
                  cases[i].dz, n, last, cases[i].n, cases[i].last);
    }
}

/* The plan of the 9 A vacuum cell in slices of 2, with the model and the config given. */
static void vacuum_case(sim_case *s, const char *algorithm, const char *extra)
{
    stem_atoms vac;
    char ini[1024];
    REQUIRE(stem_xyz_read_string("vacuum.xyz", vacuum_xyz, &vac) == STEM_OK);
    snprintf(ini, sizeof ini,
             "[sample]\nxyz = inline\n[simulation]\nalgorithm = %s\npixel_size = 0.1\n"
             "slice_thickness = 2\n%s",
             algorithm, extra);
    REQUIRE(sim_setup(s, ini, &vac) == STEM_OK);
    REQUIRE(s->plan.n_slices == 5 && s->plan.dz == 2 && fabs(s->plan.dz_last - 1) < 1e-12);
    stem_atoms_free(&vac);
}

static stem_complex fresnel(const stem_plan *p, double qx, double qy, double T)
{
    double phase = -M_PI * p->lambda * (qx * qx + qy * qy) * T;
    return (stem_complex)(cos(phase) + I * sin(phase));
}

static void test_plan_text(void)
{
    sim_case s;
    vacuum_case(&s, "multislice", "[probe]\nsemiangle = 20\n");
    char *text = stem_plan_to_text(&s.plan);
    REQUIRE(text);
    CHECK_MSG(strstr(text, "slices             5 of 2 Angstrom, the last 1 Angstrom"), "plan text:\n%s", text);
    free(text);
    sim_free(&s);
}

/* A probe through 9 A of vacuum: the probe's Fourier coefficients times the propagator over 9 A. */
static void test_vacuum_probe(void)
{
    sim_case s;
    vacuum_case(&s, "multislice", "[probe]\nsemiangle = 25\ndefocus = -30\ncs = 0.003\n");
    const stem_plan *p = &s.plan;
    size_t grid = (size_t)p->nx * p->ny;
    stem_complex *prop = stem_propagator_alloc(p), *w = stem_fft_alloc(grid, "wave"),
                 *ref = stem_fft_alloc(grid, "ref");
    REQUIRE(prop && w && ref);
    stem_fft fft;
    REQUIRE(stem_fft_create(&fft, p->nx, p->ny, 1, w, 0) == STEM_OK);
    stem_probe_fourier(p, 4.4, 3.3, w);
    memcpy(ref, w, grid * sizeof *w);
    stem_fft_inverse(&fft, w);
    stem_multislice_propagate(p, s.trans, prop, &fft, w, 1, 0, p->n_slices);
    double worst = 0, peak = 0;
    for (int j = 0; j < p->ny; j++)
        for (int i = 0; i < p->nx; i++) {
            size_t k = (size_t)j * p->nx + i;
            stem_complex want =
                ref[k] * fresnel(p, stem_fft_index(i, p->nx) / p->cell[0], stem_fft_index(j, p->ny) / p->cell[1], 9);
            worst = fmax(worst, cabsf(w[k] - want));
            peak = fmax(peak, cabsf(want));
        }
    printf("probe through 9 A of vacuum (slices of 2): max |diff| from Fresnel over 9 A %.3g (peak %.3g)\n", worst,
           peak);
    CHECK_MSG(worst <= 1e-5 * peak, "probe after 9 A of vacuum vs exp(-i pi lambda q^2 9): max |diff| %.3g (peak %.3g)",
              worst, peak);
    stem_fft_destroy(&fft);
    stem_fft_free(prop);
    stem_fft_free(w);
    stem_fft_free(ref);
    sim_free(&s);
}

/* hrtem: a plane wave tilted onto Fourier pixel (3, -2) leaves 9 A of vacuum with the phase of 9 A. */
static void test_vacuum_plane_wave(void)
{
    sim_case s;
    char extra[256];
    double px = 1e3 * stem_wavelength(200) / 10.86; /* mrad per Fourier pixel */
    snprintf(extra, sizeof extra, "[probe]\nbeam_tilt_x = %.17g\nbeam_tilt_y = %.17g\n", 3 * px, -2 * px);
    vacuum_case(&s, "hrtem", extra);
    const stem_plan *p = &s.plan;
    REQUIRE(p->plane_k[0] == 3 && p->plane_k[1] == -2);
    stem_complex *wave = stem_fft_alloc((size_t)p->nx * p->ny, "wave");
    REQUIRE(wave && stem_hrtem_exit_wave(p, s.trans, wave) == STEM_OK);
    stem_complex got = wave[(size_t)(p->ny - 2) * p->nx + 3], want = fresnel(p, 3 / p->cell[0], -2 / p->cell[1], 9);
    printf("plane wave (3, -2) through 9 A of vacuum: phase %.7f rad, Fresnel over 9 A %.7f rad (over 10 A %.7f)\n",
           cargf(got), carg(want), carg(fresnel(p, 3 / p->cell[0], -2 / p->cell[1], 10)));
    CHECK_MSG(cabs(got - want) <= 1e-5, "hrtem exit wave %.7f%+.7fi, Fresnel over 9 A %.7f%+.7fi", crealf(got),
              cimagf(got), creal(want), cimag(want));
    stem_fft_free(wave);
    sim_free(&s);
}

/* PRISM: each beam of the S-matrix of 9 A of vacuum is its plane wave times the propagator over 9 A
 * (the compact S-matrix's box in real space: its pixel (0, 0) is that factor). */
static void test_vacuum_smatrix(void)
{
    sim_case s;
    vacuum_case(&s, "prism", "[probe]\nsemiangle = 20\n[simulation]\ninterpolation_x = 2\ninterpolation_y = 2\n");
    const stem_plan *p = &s.plan;
    size_t box = (size_t)p->crop_nx * p->crop_ny;
    stem_complex *S = stem_fft_alloc(box * p->n_beams, "S-matrix");
    REQUIRE(S && stem_prism_smatrix_beams(p, s.trans, 0, p->n_beams, S) == STEM_OK);
    double worst = 0;
    for (int b = 0; b < p->n_beams; b++) {
        stem_complex want = fresnel(p, p->beam_kx[b] / p->cell[0], p->beam_ky[b] / p->cell[1], 9);
        worst = fmax(worst, cabs(S[b * box] - want));
    }
    printf("S-matrix of 9 A of vacuum, %d beams: max |diff| from Fresnel over 9 A %.3g\n", p->n_beams, worst);
    CHECK_MSG(worst <= 1e-5, "S-matrix vs exp(-i pi lambda q^2 9): max |diff| %.3g over %d beams", worst, p->n_beams);
    stem_fft_free(S);
    sim_free(&s);
}

/* Atoms in both cells: Si and Au, one of them (z = 8.5) in the 9 A cell's thin last slice. */
static const char *atoms_xyz = "atoms\n10.86 10.86 %g\n14 2.0 3.0 0.7 1.0 0.0\n79 6.1 5.2 3.1 1.0 0.0\n"
                               "14 8.3 8.8 5.5 1.0 0.0\n79 4.4 7.7 7.2 1.0 0.0\n14 5.0 2.2 8.5 1.0 0.0\n";

static void atoms_exit_wave(double cell_z, const char *projection, sim_case *s, stem_complex **wave)
{
    stem_atoms a;
    char xyz[512], ini[512];
    snprintf(xyz, sizeof xyz, atoms_xyz, cell_z);
    REQUIRE(stem_xyz_read_string("atoms.xyz", xyz, &a) == STEM_OK);
    snprintf(ini, sizeof ini,
             "[sample]\nxyz = inline\n[simulation]\nalgorithm = hrtem\npixel_size = 0.1\n"
             "slice_thickness = 2\nthermal = false\nprojection = %s\n",
             projection);
    REQUIRE(sim_setup(s, ini, &a) == STEM_OK);
    stem_atoms_free(&a);
    *wave = stem_fft_alloc((size_t)s->plan.nx * s->plan.ny, "wave");
    REQUIRE(*wave && stem_hrtem_exit_wave(&s->plan, s->trans, *wave) == STEM_OK);
}

/* Both projections: the finite one's last slice reaches down to everything below its top
 * (potential.c), so the 9 A and 10 A cells have the same slices. */
static void test_atoms(const char *projection)
{
    sim_case thin, full;
    stem_complex *w9, *w10;
    atoms_exit_wave(9, projection, &thin, &w9);
    atoms_exit_wave(10, projection, &full, &w10);
    const stem_plan *p = &thin.plan;
    REQUIRE(p->n_slices == 5 && full.plan.n_slices == 5 && fabs(p->dz_last - 1) < 1e-12 && full.plan.dz_last == 2);
    size_t grid = (size_t)p->nx * p->ny;
    double dt = 0;
    for (size_t k = 0; k < grid * p->n_slices; k++) dt = fmax(dt, cabsf(thin.trans[k] - full.trans[k]));
    REQUIRE(dt == 0); /* the same slices: only the last propagation differs */
    double worst = 0, peak = 0, moved = 0;
    for (int j = 0; j < p->ny; j++)
        for (int i = 0; i < p->nx; i++) {
            size_t k = (size_t)j * p->nx + i;
            stem_complex extra =
                fresnel(p, stem_fft_index(i, p->nx) / p->cell[0], stem_fft_index(j, p->ny) / p->cell[1], 1);
            worst = fmax(worst, cabsf(w9[k] * extra - w10[k]));
            moved = fmax(moved, cabsf(w9[k] - w10[k]));
            peak = fmax(peak, cabsf(w10[k]));
        }
    printf("atoms, %s projection: 9 A cell + 1 A of vacuum vs 10 A cell: max |diff| %.3g (peak %.3g; the two cells' "
           "exit waves differ by %.3g)\n",
           projection, worst, peak, moved);
    CHECK_MSG(worst <= 1e-3 * moved,
              "9 A cell propagated 1 A further vs 10 A cell: max |diff| %.3g (they differ by %.3g)", worst, moved);
    CHECK_MSG(moved >= 1e-4 * peak, "the 9 A and 10 A cells' exit waves should differ (by %.3g)", moved);
    stem_fft_free(w9);
    stem_fft_free(w10);
    sim_free(&thin);
    sim_free(&full);
}

int main(void)
{
    stem_log_init(0, STEM_LOG_QUIET);
    test_counts();
    test_plan_text();
    test_vacuum_probe();
    test_vacuum_plane_wave();
    test_vacuum_smatrix();
    test_atoms("infinite");
    test_atoms("finite");
    return check_exit("test_slices");
}
