/* Unit tests of the cost model's links (partition/link_model.c): measured
 * pairs of devices, modelled pairs of entries of one device, and the
 * arithmetic of a move and of the reads a launch makes across links. */
#include "check.h"
#include "partition/link_model.h"

#include <math.h>

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b);
}

int main(void)
{
    /* Entries 0 and 1 on device 4, entry 2 on device 7. */
    const int entry_device[] = {4, 4, 7};
    const int devices[] = {4, 7};
    static double gbps[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    gbps[0][0] = 1200; /* within device 4 */
    gbps[1][1] = 1500;
    gbps[0][1] = 100; /* device 4 to 7 */
    gbps[1][0] = 150;
    struct mgpu_link_model m;
    CHECK(mgpu_link_model_build(&m, entry_device, 3, devices, 2, gbps) == 0);
    CHECK(m.nentries == 3);
    CHECK(near(m.gbps[0][0], 1200) && !m.modelled[0][0]);
    CHECK(near(m.gbps[0][1], 1200 / MGPU_LINK_SAME_DEVICE_SHARE) && m.modelled[0][1]);
    CHECK(near(m.gbps[0][2], 100) && !m.modelled[0][2]);
    CHECK(near(m.gbps[2][1], 150) && near(m.gbps[2][2], 1500));

    /* 1 GB from entry 2 to entry 0: 1/150 s to copy; a launch on entry 0
     * that reads it where it lies spends 1/150 - 1/1200 s more than with it
     * at home, so one such launch does not pay for the copy, two do. */
    struct mgpu_link_move move = {1000000000, 2, 0};
    double copy = mgpu_link_copy_seconds(&m, &move, 1);
    CHECK(near(copy, 1.0 / 150));
    const double shares[MGPU_MAX_GPUS] = {0.5, 0.25, 0.25};
    double remote = mgpu_link_launch_read_seconds(&m, 1000000000, 2, 0, shares);
    CHECK(near(remote, 1.0 / 150 - 1.0 / 1200));
    CHECK(remote < copy && 2 * remote > copy);
    CHECK(mgpu_link_launch_read_seconds(&m, 1000000000, 0, 0, shares) == 0);
    /* Bytes already where they go cost nothing to copy. */
    struct mgpu_link_move stay = {1000000000, 1, 1};
    CHECK(mgpu_link_copy_seconds(&m, &stay, 1) == 0);
    /* Spread half, a quarter, a quarter: whole on entry 0, it reads a
     * quarter from entry 1 (modelled: 100 GB/s) and a quarter from entry 2
     * (150 GB/s); split along that spread, nothing. */
    CHECK(near(mgpu_link_launch_read_seconds(&m, 1000000000, -1, 0, shares),
               0.25 * (1.0 / 100 - 1.0 / 1200) + 0.25 * (1.0 / 150 - 1.0 / 1200)));
    CHECK(mgpu_link_launch_read_seconds(&m, 1000000000, -1, -1, shares) == 0);
    /* Split over entry 0's buffer: entries 1 and 2 read their quarters in
     * parallel (2.3 ms each), but entry 0 sends half a GB through ports of
     * 100 GB/s at best: 5 ms. */
    CHECK(near(mgpu_link_launch_read_seconds(&m, 1000000000, 0, -1, shares), 0.5 / 100));
    /* Entries of one device: a launch on entry 0 reading entry 1's GB pays
     * the modelled link's time less the local one's. */
    CHECK(
        near(mgpu_link_launch_read_seconds(&m, 1000000000, 1, 0, shares), 1.0 / 100 - 1.0 / 1200));
    /* A bad entry counts for nothing. */
    struct mgpu_link_move bad = {1 << 30, 5, 0};
    CHECK(mgpu_link_copy_seconds(&m, &bad, 1) == 0);

    char lines[MGPU_MAX_GPUS][512];
    CHECK(mgpu_link_model_describe(&m, lines, MGPU_MAX_GPUS) == 3);
    CHECK_CONTAINS(lines[0], "to GPU 0: from 0 1200 GB/s, from 1 100 GB/s*, from 2 150 GB/s");

    /* An entry on a device not measured, or a bandwidth of 0: no model. */
    const int unknown[] = {4, 9};
    CHECK(mgpu_link_model_build(&m, unknown, 2, devices, 2, gbps) == -1);
    gbps[1][0] = 0;
    CHECK(mgpu_link_model_build(&m, entry_device, 3, devices, 2, gbps) == -1);
    CHECK_DONE();
}
