/* The kernels the driver-API test clients launch, as PTX, and what each
 * computes: the fake GPU (tests/fake/) runs them on the host by name, a
 * real GPU runs the PTX. Made by `nvcc -arch=sm_80 -ptx` (CUDA 13.0) from
 *
 *   extern "C" __global__ void mgpu_test_axpy(float *y, const float *x, float a, unsigned n)
 *   {   // one element per thread: y[i] = a * x[i] + y[i] for i < n
 *       unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
 *       if (i < n) y[i] = a * x[i] + y[i];
 *   }
 *   extern "C" __global__ void mgpu_test_fill(unsigned *p, unsigned value, unsigned n)
 *   {   // a grid-stride loop: p[i] = value + i for every i < n
 *       for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
 *           p[i] = value + i;
 *   }
 */
#ifndef MGPU_TEST_KERNELS_H
#define MGPU_TEST_KERNELS_H

#define MGPU_TEST_AXPY "mgpu_test_axpy"
#define MGPU_TEST_FILL "mgpu_test_fill"

static const char mgpu_test_kernels_ptx[] =
    ".version 9.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    "\t// .globl\tmgpu_test_axpy\n"
    "\n"
    ".visible .entry mgpu_test_axpy(\n"
    "\t.param .u64 mgpu_test_axpy_param_0,\n"
    "\t.param .u64 mgpu_test_axpy_param_1,\n"
    "\t.param .f32 mgpu_test_axpy_param_2,\n"
    "\t.param .u32 mgpu_test_axpy_param_3\n"
    ")\n"
    "{\n"
    "\t.reg .pred \t%p<2>;\n"
    "\t.reg .f32 \t%f<5>;\n"
    "\t.reg .b32 \t%r<6>;\n"
    "\t.reg .b64 \t%rd<8>;\n"
    "\n"
    "\n"
    "\tld.param.u64 \t%rd1, [mgpu_test_axpy_param_0];\n"
    "\tld.param.u64 \t%rd2, [mgpu_test_axpy_param_1];\n"
    "\tld.param.f32 \t%f1, [mgpu_test_axpy_param_2];\n"
    "\tld.param.u32 \t%r2, [mgpu_test_axpy_param_3];\n"
    "\tmov.u32 \t%r3, %ctaid.x;\n"
    "\tmov.u32 \t%r4, %ntid.x;\n"
    "\tmov.u32 \t%r5, %tid.x;\n"
    "\tmad.lo.s32 \t%r1, %r3, %r4, %r5;\n"
    "\tsetp.ge.u32 \t%p1, %r1, %r2;\n"
    "\t@%p1 bra \t$L__BB0_2;\n"
    "\n"
    "\tcvta.to.global.u64 \t%rd3, %rd1;\n"
    "\tcvta.to.global.u64 \t%rd4, %rd2;\n"
    "\tmul.wide.u32 \t%rd5, %r1, 4;\n"
    "\tadd.s64 \t%rd6, %rd4, %rd5;\n"
    "\tld.global.f32 \t%f2, [%rd6];\n"
    "\tadd.s64 \t%rd7, %rd3, %rd5;\n"
    "\tld.global.f32 \t%f3, [%rd7];\n"
    "\tfma.rn.f32 \t%f4, %f2, %f1, %f3;\n"
    "\tst.global.f32 \t[%rd7], %f4;\n"
    "\n"
    "$L__BB0_2:\n"
    "\tret;\n"
    "\n"
    "}\n"
    "\t// .globl\tmgpu_test_fill\n"
    ".visible .entry mgpu_test_fill(\n"
    "\t.param .u64 mgpu_test_fill_param_0,\n"
    "\t.param .u32 mgpu_test_fill_param_1,\n"
    "\t.param .u32 mgpu_test_fill_param_2\n"
    ")\n"
    "{\n"
    "\t.reg .pred \t%p<3>;\n"
    "\t.reg .b32 \t%r<13>;\n"
    "\t.reg .b64 \t%rd<5>;\n"
    "\n"
    "\n"
    "\tld.param.u64 \t%rd2, [mgpu_test_fill_param_0];\n"
    "\tld.param.u32 \t%r6, [mgpu_test_fill_param_1];\n"
    "\tld.param.u32 \t%r7, [mgpu_test_fill_param_2];\n"
    "\tmov.u32 \t%r1, %ntid.x;\n"
    "\tmov.u32 \t%r8, %ctaid.x;\n"
    "\tmov.u32 \t%r9, %tid.x;\n"
    "\tmad.lo.s32 \t%r12, %r8, %r1, %r9;\n"
    "\tsetp.ge.u32 \t%p1, %r12, %r7;\n"
    "\t@%p1 bra \t$L__BB1_3;\n"
    "\n"
    "\tmov.u32 \t%r10, %nctaid.x;\n"
    "\tmul.lo.s32 \t%r3, %r10, %r1;\n"
    "\tcvta.to.global.u64 \t%rd1, %rd2;\n"
    "\n"
    "$L__BB1_2:\n"
    "\tmul.wide.u32 \t%rd3, %r12, 4;\n"
    "\tadd.s64 \t%rd4, %rd1, %rd3;\n"
    "\tadd.s32 \t%r11, %r12, %r6;\n"
    "\tst.global.u32 \t[%rd4], %r11;\n"
    "\tadd.s32 \t%r12, %r12, %r3;\n"
    "\tsetp.lt.u32 \t%p2, %r12, %r7;\n"
    "\t@%p2 bra \t$L__BB1_2;\n"
    "\n"
    "$L__BB1_3:\n"
    "\tret;\n"
    "\n"
    "}\n"
    "\n";

#endif
