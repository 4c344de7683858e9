/* mgpu-run: checks the request, finds the real driver and the GPUs, sets the
 * environment that makes the program load mgpu's libcuda.so.1 with the chosen
 * GPUs, and executes the program in its place (so its exit status is the
 * program's). Anything that stops mgpu but not the program (no driver, no
 * GPU) runs the program unchanged, saying so. */
#include <build_config.h>

#include "base/config.h"
#include "base/driver_locate.h"
#include "base/real_driver.h"
#include "src/run/gpu_selection.h"
#include "src/run/mpi_ranks.h"
#include "src/run/probe_compile.h"
#include "src/run/rank_binding.h"
#include "src/run/launcher_options.h"
#include "src/run/machine_cache.h"
#include "partition/topology.h"
#include "partition/nvml_library.h"
#include "base/monotonic_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MGPU_PKGLIBDIR
#error "MGPU_PKGLIBDIR must name the directory of the installed shim"
#endif

#define EXIT_USAGE 2

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mgpu-run: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* The program's path the way execvp would find it; exits like a shell when
 * there is none. */
static void find_program(const char *name, char *out, size_t outlen)
{
    if (strchr(name, '/') != NULL) {
        struct stat st;
        if (stat(name, &st) != 0) {
            say("cannot run '%s': %s; check the path", name, strerror(errno));
            exit(127);
        }
        if (!S_ISREG(st.st_mode) || access(name, X_OK) != 0) {
            say("cannot run '%s': not an executable file; check the path or chmod +x it", name);
            exit(126);
        }
        snprintf(out, outlen, "%s", name);
        return;
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char candidate[PATH_MAX];
        snprintf(candidate, sizeof candidate, "%.*s/%s", (int)n, n ? path : ".", name);
        struct stat st;
        if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) {
            snprintf(out, outlen, "%s", candidate);
            return;
        }
        path += n;
        if (*path)
            path++;
    }
    say("cannot find program '%s' in PATH; give its path, e.g. ./%s", name, name);
    exit(127);
}

static void run_program(char *const argv[], int index, const char *path)
{
    fflush(NULL);
    execv(path, argv + index);
    if (errno == ENOEXEC) {
        /* A script without "#!": /bin/sh runs it, as execvp and the shells
         * do (argv[0] /bin/sh, then the script's path and its arguments). */
        int argc = 0;
        while (argv[index + argc] != NULL)
            argc++;
        char **sh_argv = malloc((size_t)(argc + 2) * sizeof *sh_argv);
        if (sh_argv != NULL) {
            sh_argv[0] = (char *)"/bin/sh";
            sh_argv[1] = (char *)path;
            for (int i = 1; i <= argc; i++)
                sh_argv[i + 1] = argv[index + i];
            execv("/bin/sh", sh_argv);
            free(sh_argv);
        }
        errno = ENOEXEC;
    }
    say("cannot run '%s': %s", path, strerror(errno));
    exit(errno == ENOENT ? 127 : 126);
}

static void prepend_env(const char *name, const char *value)
{
    const char *old = getenv(name);
    if (old == NULL || *old == '\0') {
        setenv(name, value, 1);
        return;
    }
    size_t n = strlen(value) + strlen(old) + 2;
    char *joined = malloc(n);
    if (joined == NULL) {
        say("out of memory");
        exit(EXIT_FAILURE);
    }
    snprintf(joined, n, "%s:%s", value, old);
    setenv(name, joined, 1);
    free(joined);
}

static void format_uuid(char *out, size_t outlen, const CUuuid *u)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, outlen,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

/* An absolute path for the program's environment, since the program may
 * change directory. `option` names where it came from, for the message. */
static void absolute_path(const char *path, const char *option, char *out, size_t outlen)
{
    char cwd[PATH_MAX];
    int n;
    if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
        n = snprintf(out, outlen, "%s", path);
    else
        n = snprintf(out, outlen, "%s/%s", cwd, path);
    if (n < 0 || (size_t)n >= outlen) {
        say("the %s path %s is too long; give a shorter one", option, path);
        exit(EXIT_USAGE);
    }
}

/* Where mgpu's libraries are when this mgpu-run is the one of a build
 * tree, not installed: libtool leaves them in .libs beside it. True with
 * that directory in out. */
static bool build_tree_libdir(char *out, size_t outlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    char shim[PATH_MAX];
    if (snprintf(out, outlen, "%s/.libs", exe) >= (int)outlen ||
        snprintf(shim, sizeof shim, "%s/libcuda.so.1", out) >= (int)sizeof shim)
        return false;
    return access(shim, R_OK) == 0;
}

/* Whether the trace file can be written at exit, asked before the program
 * runs: a file that is there must be writable (it is not truncated here);
 * one that is not is created and removed again, so that a failed check
 * leaves nothing behind. Returns 0, or -1 with errno. */
static int trace_writable(const char *path)
{
    for (int tries = 0; tries < 3; tries++) {
        struct stat st;
        if (stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                errno = EISDIR;
                return -1;
            }
            return access(path, W_OK);
        }
        if (errno != ENOENT)
            return -1;
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            close(fd);
            unlink(path);
            return 0;
        }
        if (errno != EEXIST)
            return -1;
        /* Made meanwhile (the check of another rank of an MPI job): again. */
    }
    return 0;
}

/* The model of --topology or of this machine. */
static struct mgpu_topology topology;
/* The bus id of each GPU, the driver's (or NVML's, nvml_machine), "" where
 * it does not say: an XML file must be of this machine, and the bus ids
 * tell. */
static char bus_ids[MGPU_MAX_GPUS][MGPU_BUS_ID_LEN];
/* This machine as NVML sees it, where it stands for the driver's: -n on a
 * machine of several GPUs then chooses them without initialising the
 * driver, which the program initialises again (on 4 x H200, a program's
 * wall time under -n 4 was 1.4 s longer than under a list of the same
 * GPUs, which never asked the driver). */
static struct mgpu_topology nvml_machine;
static bool nvml_machine_loaded;

/* The topology of --topology or of this machine (NVML's where it was
 * loaded, else the driver's), into `topology`, with the GPUs' bus ids.
 * Returns 0, or -1 with why. */
static int load_topology(const struct launcher_options *opt, int device_count, char *why,
                         size_t whylen)
{
    int r = 0;
    if (opt->topology != NULL)
        r = mgpu_topology_load_xml(&topology, opt->topology, why, whylen);
    else if (nvml_machine_loaded)
        topology = nvml_machine;
    else
        r = mgpu_topology_load_machine(&topology, why, whylen);
    for (int i = 0; i < device_count && i < MGPU_MAX_GPUS; i++) {
        char text[32];
        CUdevice dev;
        bus_ids[i][0] = '\0';
        if (nvml_machine_loaded)
            memcpy(bus_ids[i], nvml_machine.gpus[i].bus_id, sizeof bus_ids[i]);
        else if (mgpu_drv.cuDeviceGetPCIBusId != NULL &&
                 mgpu_drv.cuDeviceGet(&dev, i) == CUDA_SUCCESS &&
                 mgpu_drv.cuDeviceGetPCIBusId(text, (int)sizeof text, dev) == CUDA_SUCCESS &&
                 mgpu_bus_id_normalise(text, bus_ids[i]) != 0)
            bus_ids[i][0] = '\0';
    }
    return r;
}

/* Replaces index order with the topology's choice; a topology that cannot
 * be loaded or does not match the driver's GPUs leaves index order, said in
 * one line (the run goes on). */
static void choose_by_topology(const struct launcher_options *opt, int device_count, int *chosen,
                               int chosen_len)
{
    char why[512];
    int r = load_topology(opt, device_count, why, sizeof why);
    if (r == 0)
        r = gpu_select_by_topology(&topology, device_count, bus_ids, chosen_len, chosen, why,
                                   sizeof why);
    if (r != 0) {
        say("%s; taking GPUs in index order", why);
        return;
    }
    if (opt->verbose && topology.note[0])
        say("topology: %s", topology.note);
    if (opt->verbose) {
        char list[MGPU_MAX_GPUS * 4] = "";
        size_t len = 0;
        for (int i = 0; i < chosen_len; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", chosen[i]);
        say("GPUs %s, chosen and ordered from the topology of %s (see mgpu-info)", list,
            topology.source);
    }
}

/* Under MPI with several ranks on this node and no --gpus list: this
 * rank's group of the node's GPUs (rank_groups.h), or its first -n of it;
 * exits with a one-line error naming the fix when that cannot be. The
 * rank and its GPUs go to the program's environment (MGPU_RANK) and, with
 * -v, to stderr. */
static void choose_for_rank(const struct launcher_options *opt, const struct mgpu_mpi_rank *mpi,
                            int device_count, int *chosen, int *chosen_len)
{
    char err[512];
    if (load_topology(opt, device_count, err, sizeof err) != 0 ||
        gpu_select_for_rank(&topology, device_count, bus_ids, mpi->local_rank, mpi->local_size,
                            opt->ngpus, opt->count_source, chosen, chosen_len, err,
                            sizeof err) != 0) {
        say("%s", err);
        exit(EXIT_USAGE);
    }
    if (opt->verbose) {
        char list[MGPU_MAX_GPUS * 4] = "";
        size_t len = 0;
        for (int i = 0; i < *chosen_len; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", chosen[i]);
        char rank[32] = "";
        if (mpi->rank >= 0)
            snprintf(rank, sizeof rank, "rank %d, ", mpi->rank);
        say("%slocal rank %d of %d on this node (%s): GPUs %s, its share of the node's %d "
            "(see mgpu-info --ranks %d)",
            rank, mpi->local_rank, mpi->local_size, mpi->launcher, list, topology.gpu_count,
            mpi->local_size);
    }
    /* Near its GPUs, where the model is of this machine. */
    if (!topology.this_machine)
        return;
    char cpus[512];
    int bound = mgpu_bind_rank_near_gpus(&topology, chosen, *chosen_len, cpus, sizeof cpus);
    if (bound < 0)
        say("%s; the rank runs where the launcher put it", cpus);
    else if (opt->verbose)
        say(bound ? "the rank runs on CPUs %s, near its GPUs" : "the rank is not bound: %s", cpus);
}

/* What the launcher's choice of GPUs took, for -v (ms; 0: not done). */
static double answers_ms, nvml_topology_ms;
/* NVML's answers were kept from an earlier run (machine_cache.h), in
 * this file. */
static bool answers_kept;
static char answers_path[PATH_MAX];

/* NVML's answers about this machine, kept from an earlier run or asked now
 * (and then kept); with_gpus asks for the GPUs and their pairs too.
 * Returns 0, or -1 with why. */
static int nvml_answers(bool with_gpus, struct mgpu_nvml_answers *a, char *why, size_t whylen)
{
    uint64_t key;
    bool keeping = mgpu_machine_key(&key) == 0 &&
                   mgpu_machine_cache_path(answers_path, sizeof answers_path) == 0;
    answers_kept = keeping && mgpu_machine_cache_load(answers_path, key, with_gpus, a);
    if (answers_kept)
        return 0;
    struct mgpu_nvml nvml;
    if (mgpu_nvml_open(&nvml, why, whylen) != 0)
        return -1;
    int r = mgpu_nvml_answers_read(&nvml, with_gpus, a, why, whylen);
    mgpu_nvml_close(&nvml);
    if (r == 0 && keeping)
        mgpu_machine_cache_save(answers_path, key, a);
    return r;
}

/* The machine's device count from NVML, or -1 where the driver must be
 * asked: the driver is not the system's (MGPU_DRIVER), CUDA_VISIBLE_DEVICES
 * already narrows it (its entries may not be NVML's), NVML does not
 * answer, a GPU is in MIG mode (several CUDA devices, or none), or the
 * topology decides the GPUs (-n on a machine of several, or ranks sharing
 * the node's) and NVML's cannot stand for the driver's (nvml_machine). */
static int quick_device_count(const struct launcher_options *opt, bool per_rank)
{
    if (getenv("MGPU_DRIVER") != NULL || getenv("CUDA_VISIBLE_DEVICES") != NULL)
        return -1;
    /* -n may need the topology: the GPUs are asked for with the count. */
    bool with_gpus = opt->gpus_len == 0;
    static struct mgpu_nvml_answers answers;
    char why[256];
    long long begin = mgpu_monotonic_ns();
    int r = nvml_answers(with_gpus, &answers, why, sizeof why);
    answers_ms = mgpu_ms_since(begin);
    if (r != 0 || answers.mig_gpu >= 0) {
        if (opt->verbose)
            say("%s; the CUDA driver counts the GPUs",
                r != 0 ? why : "a GPU is in MIG mode or unreadable");
        return -1;
    }
    int count = answers.count;
    if (with_gpus && (count > 1 || per_rank)) {
        begin = mgpu_monotonic_ns();
        r = mgpu_topology_from_nvml_answers(&nvml_machine, &answers, why, sizeof why);
        nvml_topology_ms = mgpu_ms_since(begin);
        if (r != 0) {
            if (opt->verbose)
                say("%s; the CUDA driver gives the topology", why);
            return -1;
        }
        nvml_machine_loaded = true;
    }
    return count;
}

/* The UUID of the driver's device `index`, as CUDA_VISIBLE_DEVICES takes it. */
static int device_identity(int index, char *out, size_t outlen)
{
    CUdevice dev;
    CUuuid uuid;
    if (mgpu_drv.cuDeviceGet(&dev, index) != CUDA_SUCCESS ||
        mgpu_drv.cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS) {
        say("cannot read the identity of GPU %d; check nvidia-smi", index);
        return -1;
    }
    format_uuid(out, outlen, &uuid);
    return 0;
}

/* With -v: which device the run's GPU `g` stands on, named by the driver
 * where it was asked. */
static void describe_gpu(int g, int device, bool repeated, bool quick)
{
    char name[128] = "?", where[48] = "";
    CUdevice dev;
    if (!quick && mgpu_drv.cuDeviceGet(&dev, device) == CUDA_SUCCESS)
        mgpu_drv.cuDeviceGetName(name, sizeof name, dev);
    if (repeated)
        snprintf(where, sizeof where, " (device %d)", device);
    char uuid[48] = "";
    if (quick && nvml_machine_loaded)
        say("GPU %d%s: %s (%s)%s", g, where, nvml_machine.gpus[device].name,
            nvml_machine.gpus[device].bus_id, g == 0 ? ", home" : "");
    else if (quick)
        say("GPU %d%s: device %d%s", g, where, device, g == 0 ? ", home" : "");
    else if (repeated)
        say("GPU %d%s: %s%s", g, where, name, g == 0 ? ", home" : "");
    else if (device_identity(device, uuid, sizeof uuid) == 0)
        say("GPU %d: %s (%s)%s", device, name, uuid, g == 0 ? ", home" : "");
}

int main(int argc, char **argv)
{
    long long started = mgpu_monotonic_ns();
    char err[512];
    struct mgpu_config env;
    if (mgpu_config_parse(&env, env_get, err, sizeof err) != 0) {
        say("%s", err);
        return EXIT_USAGE;
    }
    struct launcher_options opt;
    if (launcher_parse(argc, argv, &env, &opt, err, sizeof err) != 0) {
        say("%s", err);
        return EXIT_USAGE;
    }
    if (opt.help) {
        launcher_print_help("mgpu-run");
        return 0;
    }
    if (opt.version) {
        printf("mgpu-run %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (opt.program_index == 0) {
        say("no program given; usage: mgpu-run [options] [--] program [args] (see --help)");
        return EXIT_USAGE;
    }
    const char *program = argv[opt.program_index];
    char program_path[PATH_MAX];
    find_program(program, program_path, sizeof program_path);

    if (getenv("MGPU_ACTIVE") != NULL) {
        if (opt.verbose)
            say("already under mgpu-run; running %s as it is", program);
        run_program(argv, opt.program_index, program_path);
    }

    /* The trace is written at exit: a path it cannot take is a mistake in
     * the request, said now rather than after the whole run. */
    char trace[PATH_MAX] = "";
    if (opt.trace) {
        const char *source = opt.trace == env.trace_path ? "MGPU_TRACE" : "--trace";
        absolute_path(opt.trace, source, trace, sizeof trace);
        if (trace_writable(trace) != 0) {
            say("cannot write the trace file %s (%s): %s; give a writable file path", trace, source,
                strerror(errno));
            return EXIT_USAGE;
        }
    }

    /* Probes first: a probe that does not compile stops the run before it
     * starts, on any machine. */
    char probe_list[4 * PATH_MAX] = "";
    for (int p = 0; p < opt.nprobes; p++) {
        char ptx[PATH_MAX];
        if (mgpu_probe_prepare(opt.probes[p], opt.verbose, ptx, sizeof ptx, err, sizeof err) != 0) {
            say("%s", err);
            return EXIT_USAGE;
        }
        size_t used = strlen(probe_list);
        if ((size_t)snprintf(probe_list + used, sizeof probe_list - used, "%s%s=%s", p ? "," : "",
                             opt.probes[p], ptx) >= sizeof probe_list - used) {
            say("too many probes for one run; give fewer --probe options");
            return EXIT_USAGE;
        }
    }

    const char *libdir = getenv("MGPU_LIBDIR");
    char build_libs[PATH_MAX - 64]; /* room for the libraries' names after it */
    if ((libdir == NULL || *libdir == '\0') && build_tree_libdir(build_libs, sizeof build_libs))
        libdir = build_libs;
    if (libdir == NULL || *libdir == '\0')
        libdir = MGPU_PKGLIBDIR;
    char shim[PATH_MAX], audit[PATH_MAX], blas[PATH_MAX], host_blas[PATH_MAX];
    snprintf(shim, sizeof shim, "%s/libcuda.so.1", libdir);
    snprintf(audit, sizeof audit, "%s/mgpu_audit.so", libdir);
    snprintf(blas, sizeof blas, "%s/libmgpu-blas.so", libdir);
    snprintf(host_blas, sizeof host_blas, "%s/libmgpu-hostblas.so", libdir);
    if (opt.host_blas && access(host_blas, R_OK) != 0) {
        say("--blas needs %s, which is missing; reinstall mgpu (make install) or set MGPU_LIBDIR",
            host_blas);
        return EXIT_USAGE;
    }
    if (access(shim, R_OK) != 0) {
        say("mgpu's driver library %s is missing; reinstall mgpu (make install) or set MGPU_LIBDIR",
            shim);
        return EXIT_USAGE;
    }

    char driver[PATH_MAX];
    if (mgpu_driver_locate(shim, driver, sizeof driver, err, sizeof err) != 0) {
        say("%s; running %s without mgpu", err, program);
        run_program(argv, opt.program_index, program_path);
    }
    /* The driver initialised here costs what the program's own start does
     * again (cuInit: 185 ms on one H100): a request that needs no topology
     * is checked against NVML's count instead. */
    struct mgpu_mpi_rank mpi;
    if (mgpu_mpi_rank_detect(env_get, &mpi, err, sizeof err) != 0) {
        say("%s", err);
        return EXIT_USAGE;
    }
    /* Several ranks on this node share its GPUs out by topology. */
    bool per_rank = mpi.found && mpi.local_size > 1 && opt.gpus_len == 0;
    int device_count = quick_device_count(&opt, per_rank);
    bool quick = device_count > 0;
    if (!quick) {
        CUresult r = CUDA_ERROR_NOT_INITIALIZED;
        if (mgpu_driver_load(driver, err, sizeof err) != 0) {
            say("%s; running %s without mgpu", err, program);
            run_program(argv, opt.program_index, program_path);
        }
        r = mgpu_drv.cuInit(0);
        if (r == CUDA_SUCCESS)
            r = mgpu_drv.cuDeviceGetCount(&device_count);
        if (r != CUDA_SUCCESS || device_count == 0) {
            say("no usable GPU (%s); running %s without mgpu",
                r != CUDA_SUCCESS ? mgpu_cu_error_name(r) : "the driver sees no device", program);
            run_program(argv, opt.program_index, program_path);
        }
    }

    int chosen[MGPU_MAX_GPUS], chosen_len = 0;
    if (per_rank) {
        choose_for_rank(&opt, &mpi, device_count, chosen, &chosen_len);
    } else {
        if (gpu_select(device_count, opt.ngpus, opt.count_source, opt.gpus, opt.gpus_len,
                       opt.list_source, chosen, &chosen_len, err, sizeof err) != 0) {
            say("%s", err);
            return EXIT_USAGE;
        }
        if (opt.gpus_len == 0 && device_count > 1)
            choose_by_topology(&opt, device_count, chosen, chosen_len);
    }
    if (mpi.found) {
        char rank[16];
        snprintf(rank, sizeof rank, "%d", mpi.rank >= 0 ? mpi.rank : mpi.local_rank);
        setenv("MGPU_RANK", rank, 1);
    }

    /* The driver's devices inside the program are then exactly the chosen
     * devices, each once, in the order they first appear; MGPU_ENTRIES
     * says which of them each of the run's GPUs stands on. */
    int devices[MGPU_MAX_GPUS], entries[MGPU_MAX_GPUS];
    int ndevices = gpu_select_devices(chosen, chosen_len, devices, entries);
    char visible[MGPU_MAX_GPUS * 48] = "", entry_list[MGPU_MAX_GPUS * 4] = "";
    for (int i = 0; i < ndevices; i++) {
        char text[48];
        if (quick)
            snprintf(text, sizeof text, "%d", devices[i]);
        else if (device_identity(devices[i], text, sizeof text) != 0)
            return EXIT_FAILURE;
        if (i > 0)
            strcat(visible, ",");
        strcat(visible, text);
    }
    for (int i = 0; i < chosen_len; i++) {
        snprintf(entry_list + strlen(entry_list), sizeof entry_list - strlen(entry_list), "%s%d",
                 i ? "," : "", entries[i]);
        if (opt.verbose)
            describe_gpu(i, chosen[i], ndevices < chosen_len, quick);
    }
    const char *counted = quick ? " (GPUs counted with NVML)" : "";
    if (opt.verbose && quick) {
        char places[64] = "";
        if (nvml_machine_loaded && nvml_machine.places_ms > 0)
            snprintf(places, sizeof places,
                     nvml_machine.places_alike ? " (places alike in sysfs %.1f, no hwloc)"
                                               : " (hwloc's places %.1f)",
                     nvml_machine.places_ms);
        say("%.1f ms so far: NVML's answers %s %.1f, its topology %.1f%s", mgpu_ms_since(started),
            answers_kept ? "kept from an earlier run, read in" : "asked in", answers_ms,
            nvml_topology_ms, places);
    }
    if (opt.verbose && ndevices < chosen_len)
        say("running %s on %d GPUs standing on %d of %d devices; driver %s%s", program, chosen_len,
            ndevices, device_count, driver, counted);
    else if (opt.verbose)
        say("running %s on %d of %d GPUs; driver %s%s", program, chosen_len, device_count, driver,
            counted);

    setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    /* Where the GPUs were counted from kept answers, the runtime names the
     * file if the driver's devices do not match (a machine changed in a
     * way the key does not see). */
    if (quick && answers_kept)
        setenv("MGPU_NVML_KEPT", answers_path, 1);
    else
        unsetenv("MGPU_NVML_KEPT");
    setenv("MGPU_ENTRIES", entry_list, 1);
    setenv("MGPU_DRIVER", driver, 1);
    setenv("MGPU_SHIM", shim, 1);
    setenv("MGPU_ACTIVE", "1", 1);
    prepend_env("LD_LIBRARY_PATH", libdir);
    if (env.audit && access(audit, R_OK) == 0) {
        prepend_env("LD_AUDIT", audit);
        /* The audit module marks here a program's use of NCCL
         * (mirror/nccl_watch.h). */
        setenv("MGPU_NCCL_SEEN", "0", 1);
    }
    /* The program's cuBLAS GEMMs, split over the GPUs (blas/): cuBLAS is
     * found again behind it, so a program without cuBLAS is unaffected. */
    if (env.blas_split && access(blas, R_OK) == 0)
        prepend_env("LD_PRELOAD", blas);
    /* --blas: a CPU program's GEMMs, found in front of its CPU BLAS. */
    if (opt.host_blas)
        prepend_env("LD_PRELOAD", host_blas);
    setenv("MGPU_REPORT", opt.report ? "1" : "0", 1);
    char level[2] = {(char)('0' + opt.verbose), '\0'};
    setenv("MGPU_VERBOSE", level, 1);
    if (trace[0])
        setenv("MGPU_TRACE", trace, 1);
    if (probe_list[0])
        setenv("MGPU_PROBES", probe_list, 1);
    if (opt.topology) {
        char topology_path[PATH_MAX];
        absolute_path(opt.topology, "--topology", topology_path, sizeof topology_path);
        setenv("MGPU_TOPOLOGY", topology_path, 1);
    }
    /* The launcher's own time, for the report's start-up figures. */
    char launcher_ns[32];
    snprintf(launcher_ns, sizeof launcher_ns, "%lld", mgpu_monotonic_ns() - started);
    setenv("MGPU_LAUNCHER_NS", launcher_ns, 1);
    run_program(argv, opt.program_index, program_path);
    return EXIT_FAILURE;
}
