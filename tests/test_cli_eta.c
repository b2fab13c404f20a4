/* The command-line tools' ETA (examples/example.h): fed synthetic (wall time, simulated time)
   samples as the progress display gets them. A steady run gets an estimate within 1% of the
   truth; the first second, a run whose rate still changes by more than a factor 2 (an
   adaptive method finding its step size: a few slow steps, then fast ones) and a stalled run
   read "unknown", never a figure like the 10^9 s that the rate since the warm-up gave; no
   estimate is ever printed as more than a year of seconds. */
#define _POSIX_C_SOURCE 200809L
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "../examples/example.h"
#include "check.h"

/* the ETA after feeding samples every `gap` seconds from wall time 0 to `until`, the run at
   t(w) = rate * max(0, w - w_slow) + slow_rate * min(w, w_slow) */
static double eta_of(double until, double gap, double w_slow, double slow_rate, double rate, double t_end) {
    ex_eta e;
    double w, eta = -1;
    ex_eta_start_at(&e, 0);
    for (w = 0; w <= until + 1e-12; w += gap) {
        double t = slow_rate * (w < w_slow ? w : w_slow) + rate * (w > w_slow ? w - w_slow : 0);
        eta = ex_eta_seconds_at(&e, w, t, t_end);
    }
    return eta;
}

int main(void) {
    char text[32];
    double eta;
    /* steady: 0.01 time units a second, t_end 1; at 5 s, t = 0.05: 95 s left */
    eta = eta_of(5, 0.1, 0, 0, 0.01, 1);
    CHECK(fabs(eta - 95) < 0.95, "steady run: ETA %g s, want 95 s", eta);
    eta = eta_of(5, 2.0, 0, 0, 0.01, 1);    /* piped: a report every 2 s */
    CHECK(eta < 0, "piped, 3 reports: ETA %g, want unknown until 3 samples span a second", eta);
    eta = eta_of(10, 2.0, 0, 0, 0.01, 1);
    CHECK(fabs(eta - 90) < 0.9, "piped steady run at 10 s: ETA %g s, want 90 s", eta);
    /* the warm-up: nothing in the first second */
    eta = eta_of(0.9, 0.1, 0, 0, 0.01, 1);
    CHECK(eta < 0, "first second: ETA %g, want unknown", eta);
    /* an adaptive start: 1e-9 a second for 1.5 s, then 0.01 a second. The rate since the
       warm-up read (1 - 5e-10) * 0.5 / 5e-10 = 1e9 s at 1.5 s */
    eta = eta_of(1.6, 0.1, 1.5, 1e-9, 0.01, 1);
    CHECK(eta < 0, "slow start then fast: ETA %g s at 1.6 s, want unknown", eta);
    eta = eta_of(2.2, 0.1, 1.5, 1e-9, 0.01, 1);
    CHECK(eta < 0, "slow start then fast: ETA %g s at 2.2 s (rates of the window's halves differ), want unknown", eta);
    eta = eta_of(8, 0.1, 1.5, 1e-9, 0.01, 1);
    CHECK(eta > 0 && fabs(eta - (1 - 0.065) / 0.01) < 1, "slow start then fast, once steady: ETA %g s, want 93.5 s", eta);
    /* stalled: t does not move */
    eta = eta_of(5, 0.1, 10, 0, 0, 1);
    CHECK(eta < 0, "stalled run: ETA %g, want unknown", eta);
    /* the words */
    ex_format_duration(-1, text, sizeof text);
    CHECK(!strcmp(text, "unknown"), "unknown ETA printed as '%s'", text);
    ex_format_duration(42.4, text, sizeof text);
    CHECK(!strcmp(text, "42 s"), "42.4 s printed as '%s'", text);
    ex_format_duration(1017644971, text, sizeof text);
    CHECK(!strcmp(text, "> 1 year"), "1017644971 s printed as '%s'", text);
    ex_format_duration(7200, text, sizeof text);
    CHECK(!strcmp(text, "2.0 h"), "7200 s printed as '%s'", text);
    return check_finish();
}
