/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to accel/kvm: VMStateField initialisers for the vCPU sections
 * (kvm-cpu-vmstate.c, kvm-cpu-subsections.c). Each names a member of
 * X86CPUState's wire image as QEMU's vmdesc names the field, and fails to
 * compile when the member's size is not the wire type's. The subsections
 * of "cpu" that kvm-cpu-vmstate.c lists are declared here.
 */
#ifndef ACCEL_KVM_CPU_FIELDS_H
#define ACCEL_KVM_CPU_FIELDS_H

#include "migration/vmstate.h"
#include "system/kvm.h"
#include "system/cpus.h"
#include "kvm-x86.h"

/* A member of env->wire as a field named as in QEMU's vmdesc, wire type checked against it. */
#define WIRE_CHECK(_m, _bytes) \
    0 * sizeof(char[VMSTATE_SIZEOF(X86CPUState, wire._m) == (_bytes) ? 1 : -1])
#define WF(_name, _m, _type) {                                                  \
    .name = (_name), .type = (_type), .offset = offsetof(X86CPUState, wire._m), \
    .size = VMSTATE_TYPE_SIZE(_type) + WIRE_CHECK(_m, VMSTATE_TYPE_SIZE(_type)) }
#define WA(_name, _m, _n, _type) {                                              \
    .name = (_name), .type = (_type), .offset = offsetof(X86CPUState, wire._m), \
    .size = VMSTATE_TYPE_SIZE(_type) + WIRE_CHECK(_m, (_n) * VMSTATE_TYPE_SIZE(_type)), \
    .num = (_n) }
#define WS(_name, _m, _vmsd, _ctype) {                                          \
    .name = (_name), .type = VMS_STRUCT, .offset = offsetof(X86CPUState, wire._m), \
    .size = sizeof(_ctype) + WIRE_CHECK(_m, sizeof(_ctype)), .vmsd = &(_vmsd) }
#define WSA(_name, _m, _n, _vmsd, _ctype) {                                     \
    .name = (_name), .type = VMS_STRUCT, .offset = offsetof(X86CPUState, wire._m), \
    .size = sizeof(_ctype) + WIRE_CHECK(_m, (_n) * sizeof(_ctype)), .num = (_n), \
    .vmsd = &(_vmsd) }

/* A member of a nested struct, named as in QEMU's vmdesc. */
#define NF(_name, _s, _m, _type) {                                              \
    .name = (_name), .type = (_type), .offset = offsetof(_s, _m),               \
    .size = VMSTATE_TYPE_SIZE(_type) +                                          \
        0 * sizeof(char[VMSTATE_SIZEOF(_s, _m) == VMSTATE_TYPE_SIZE(_type) ? 1 : -1]) }

/* kvm-cpu-subsections.c, in QEMU 10.0's order. */
extern const VMStateDescription vmstate_cpu_async_pf_msr;
extern const VMStateDescription vmstate_cpu_async_pf_int_msr;
extern const VMStateDescription vmstate_cpu_pv_eoi_msr;
extern const VMStateDescription vmstate_cpu_steal_time_msr;
extern const VMStateDescription vmstate_cpu_poll_control_msr;
extern const VMStateDescription vmstate_cpu_fpop_ip_dp;
extern const VMStateDescription vmstate_cpu_msr_tsc_adjust;
extern const VMStateDescription vmstate_cpu_msr_tscdeadline;
extern const VMStateDescription vmstate_cpu_msr_misc_enable;
extern const VMStateDescription vmstate_cpu_avx512;

#endif
