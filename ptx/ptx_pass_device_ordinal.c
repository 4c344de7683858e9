/* Owns the device-ordinal pass: a per-module constant the runtime sets to
 * the GPU's ordinal when it loads the module on that GPU, for injected
 * per-GPU probes to read. */
#include "ptx/ptx_edit.h"
#include "ptx/ptx_passes.h"

int ptx_pass_device_ordinal(struct ptx_module *m)
{
    return ptx_add_declaration(m, ".visible .const .align 4 .u32 " MGPU_PTX_DEVICE_ORDINAL ";");
}
