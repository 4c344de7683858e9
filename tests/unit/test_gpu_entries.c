/* Unit tests of the run's GPU entries (partition/gpu_entries.c): several
 * entries on one device, their labels and their shares of a launch. */
#include "check.h"
#include "partition/gpu_entries.h"

#include <math.h>

static int near(double a, double b)
{
    return fabs(a - b) < 1e-12;
}

int main(void)
{
    struct mgpu_gpu_entries e;
    char err[256], label[64];

    /* No list: every device once. */
    CHECK(mgpu_gpu_entries_make(NULL, 0, 3, &e, err, sizeof err) == 0);
    CHECK(e.count == 3 && e.devices == 3 && e.device[2] == 2);
    CHECK(!mgpu_gpu_entries_repeated(&e));
    mgpu_gpu_entries_label(&e, 2, label, sizeof label);
    CHECK_STR(label, "GPU 2");

    /* Eight entries on one device. */
    int eight[8] = {0};
    CHECK(mgpu_gpu_entries_make(eight, 8, 1, &e, err, sizeof err) == 0);
    CHECK(e.count == 8 && e.devices == 1 && mgpu_gpu_entries_repeated(&e));
    CHECK(mgpu_gpu_entries_sharing(&e, 5) == 8);
    CHECK(mgpu_gpu_entries_first_on_device(&e, 0) && !mgpu_gpu_entries_first_on_device(&e, 3));
    int distinct[MGPU_MAX_GPUS];
    CHECK(mgpu_gpu_entries_distinct(&e, distinct) == 1 && distinct[0] == 0);
    mgpu_gpu_entries_label(&e, 3, label, sizeof label);
    CHECK_STR(label, "GPU 3 (device 0)");
    double device_weight[MGPU_MAX_GPUS] = {132};
    double w[MGPU_MAX_GPUS];
    mgpu_gpu_entries_weights(&e, device_weight, w);
    for (int g = 0; g < 8; g++)
        CHECK(near(w[g], 0.125));

    /* 0,0,1: device 0's share is split between its two entries; device 1,
     * twice as strong, keeps its share whole. */
    int mixed[] = {0, 0, 1};
    CHECK(mgpu_gpu_entries_make(mixed, 3, 2, &e, err, sizeof err) == 0);
    CHECK(e.devices == 2 && mgpu_gpu_entries_sharing(&e, 2) == 1);
    double strong[MGPU_MAX_GPUS] = {1, 2};
    mgpu_gpu_entries_weights(&e, strong, w);
    CHECK(near(w[0], 1.0 / 6) && near(w[1], 1.0 / 6) && near(w[2], 2.0 / 3));
    /* An unknown weight makes the devices alike. */
    double unknown[MGPU_MAX_GPUS] = {1, 0};
    mgpu_gpu_entries_weights(&e, unknown, w);
    CHECK(near(w[0], 0.25) && near(w[1], 0.25) && near(w[2], 0.5));
    mgpu_gpu_entries_label(&e, 2, label, sizeof label);
    CHECK_STR(label, "GPU 2 (device 1)");

    /* Devices the driver does not have. */
    int outside[] = {0, 2};
    CHECK(mgpu_gpu_entries_make(outside, 2, 2, &e, err, sizeof err) == -1);
    CHECK_STR(err, "GPU 2 is listed but the driver's GPUs are 0 to 1; list GPUs from 0 to 1");
    CHECK(e.count == 0);
    int too_high[] = {64};
    CHECK(mgpu_gpu_entries_make(too_high, 1, 100, &e, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "mgpu takes devices 0 to 63");
    CHECK(mgpu_gpu_entries_make(NULL, 0, 0, &e, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "the driver sees no GPU");
    CHECK_DONE();
}
