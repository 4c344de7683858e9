/* Owns loading an hwloc topology for mgpu: the I/O filter, the components
 * left out, and one-line messages for files hwloc cannot read. */
#include "partition/hwloc_open.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int mgpu_hwloc_open(hwloc_topology_t *out, const char *xml_path, enum mgpu_hwloc_parts parts,
                    char *err, size_t errlen)
{
    *out = NULL;
    if (xml_path != NULL && access(xml_path, R_OK) != 0) {
        snprintf(err, errlen,
                 "cannot read the topology %s: %s; give an hwloc XML file (lstopo --of xml > "
                 "FILE.xml)",
                 xml_path, strerror(errno));
        return -1;
    }
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        snprintf(err, errlen, "hwloc cannot start: %s", strerror(errno));
        return -1;
    }
    hwloc_topology_set_io_types_filter(topo, parts == MGPU_HWLOC_CPUS
                                                 ? HWLOC_TYPE_FILTER_KEEP_NONE
                                                 : HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* These would start a GPU runtime inside the process (inside the
     * program under mgpu, that is its own driver) or a display server;
     * mgpu asks the driver itself. Unknown names fail harmlessly. */
    static const char *const left_out[] = {"cuda", "opencl", "levelzero", "rsmi", "gl"};
    for (size_t i = 0; i < sizeof left_out / sizeof left_out[0]; i++)
        hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, left_out[i]);
    if (parts != MGPU_HWLOC_PCI_NVML)
        hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "nvml");
    if (xml_path != NULL && hwloc_topology_set_xml(topo, xml_path) != 0) {
        snprintf(err, errlen,
                 "%s is not an hwloc XML topology (hwloc cannot parse it); make it again with "
                 "lstopo --of xml",
                 xml_path);
        hwloc_topology_destroy(topo);
        return -1;
    }
    if (hwloc_topology_load(topo) != 0) {
        if (xml_path != NULL)
            snprintf(err, errlen,
                     "%s is not a complete hwloc XML topology (hwloc cannot load it: %s); make "
                     "it again with lstopo --of xml",
                     xml_path, strerror(errno));
        else
            snprintf(err, errlen, "hwloc cannot read this machine's topology: %s", strerror(errno));
        hwloc_topology_destroy(topo);
        return -1;
    }
    *out = topo;
    return 0;
}
