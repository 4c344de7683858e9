/* Unit tests of the cost model's links (partition/link_model.c): measured
 * pairs of devices, modelled pairs of entries of one device, and the
 * arithmetic of a move against the reads it saves. */
#include "check.h"
#include "link_model.h"

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

    /* 1 GB from entry 2 to entry 0: 1/150 s to copy; a read of it on entry
     * 0 saves 1/150 - 1/1200 s. */
    struct mgpu_link_move move = {1000000000, 2, 0};
    CHECK(near(mgpu_link_copy_seconds(&m, &move, 1), 1.0 / 150));
    CHECK(near(mgpu_link_read_saving(&m, &move, 1), 1.0 / 150 - 1.0 / 1200));
    CHECK(!mgpu_link_move_pays(&m, &move, 1, 1)); /* one launch does not pay for the copy */
    CHECK(mgpu_link_move_pays(&m, &move, 1, 2));
    /* Bytes already where they go cost and save nothing. */
    struct mgpu_link_move stay = {1000000000, 1, 1};
    CHECK(mgpu_link_copy_seconds(&m, &stay, 1) == 0 && mgpu_link_read_saving(&m, &stay, 1) == 0);
    CHECK(!mgpu_link_move_pays(&m, &stay, 1, 100));
    /* Entries of one device: a move pays after two launches, as over
     * NVLink against local memory. */
    struct mgpu_link_move same = {1 << 30, 1, 0};
    CHECK(!mgpu_link_move_pays(&m, &same, 1, 1) && mgpu_link_move_pays(&m, &same, 1, 2));
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
