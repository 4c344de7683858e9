/* Unit tests of the live-allocation record: totals, peak, frees of unknown
 * addresses, and many allocations through table growth and tombstones. */
#include "check.h"
#include "base/memory_stats.h"

int main(void)
{
    struct mgpu_memory_totals t;
    mgpu_memory_note_alloc(0x1000, 100);
    mgpu_memory_note_alloc(0x2000, 300);
    mgpu_memory_note_free(0x1000);
    mgpu_memory_note_free(0x9999); /* not ours: ignored */
    mgpu_memory_totals_get(&t);
    CHECK(t.allocations == 2 && t.frees == 1);
    CHECK(t.bytes_allocated == 400 && t.live_bytes == 300 && t.peak_bytes == 400);

    for (unsigned long round = 0; round < 4; round++) {
        for (unsigned long i = 0; i < 5000; i++)
            mgpu_memory_note_alloc(0x100000 + i * 256, 256);
        for (unsigned long i = 0; i < 5000; i++)
            mgpu_memory_note_free(0x100000 + i * 256);
    }
    mgpu_memory_totals_get(&t);
    CHECK(t.allocations == 20002 && t.frees == 20001);
    CHECK(t.live_bytes == 300);
    CHECK(t.peak_bytes == 300 + 5000 * 256);
    mgpu_memory_note_free(0x2000);
    mgpu_memory_totals_get(&t);
    CHECK(t.live_bytes == 0);

    /* An address allocated again without a free seen in between counts once,
     * even when a freed slot lies before it in the table. */
    for (unsigned long i = 0; i < 64; i++)
        mgpu_memory_note_alloc(0x200000 + i * 256, 10);
    for (unsigned long i = 0; i < 64; i += 2)
        mgpu_memory_note_free(0x200000 + i * 256);
    for (unsigned long i = 1; i < 64; i += 2)
        mgpu_memory_note_alloc(0x200000 + i * 256, 20);
    mgpu_memory_totals_get(&t);
    CHECK(t.live_bytes == 32 * 20);
    for (unsigned long i = 1; i < 64; i += 2)
        mgpu_memory_note_free(0x200000 + i * 256);
    mgpu_memory_totals_get(&t);
    CHECK(t.live_bytes == 0);
    CHECK_DONE();
}
