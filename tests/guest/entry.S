/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PVH entry (32-bit, paging off) into long mode, and every CPL0 path that
 * runs after setup: the int3 service gate, the PIT tick, exception stubs.
 * Under kvm-pvm each CPL0 instruction is emulated, so these stay tiny.
 */
#include "workload.h"

#define PTE_P           0x001
#define PTE_RW          0x002
#define PTE_US          0x004
#define PTE_PS          0x080
#define MSR_EFER        0xc0000080
#define EFER_LME        0x100
#define UART_THR        0x3f8
#define UART_LSR        0x3fd
#define LSR_THRE        0x20
#define DEBUG_EXIT_PORT 0xf4

/* Every data segment register to the flat kernel data segment. */
.macro  LOAD_DATA_SEGMENTS
        mov     $KERNEL_DS, %eax
        mov     %eax, %ds
        mov     %eax, %es
        mov     %eax, %ss
        mov     %eax, %fs
        mov     %eax, %gs
.endm

/* 32-bit, paging off: PAE, the shared page tables, EFER.LME, then paging on. */
.macro  ENTER_LONG_MODE
        mov     %cr4, %eax
        or      $0x20, %eax             /* PAE */
        mov     %eax, %cr4
        mov     $pml4, %eax
        mov     %eax, %cr3
        mov     $MSR_EFER, %ecx
        rdmsr
        or      $EFER_LME, %eax
        wrmsr
        mov     %cr0, %eax
        or      $0x80000001, %eax       /* PG | PE */
        mov     %eax, %cr0
.endm

/*
 * XEN_ELFNOTE_PHYS32_ENTRY with a 4-byte desc. QEMU 7.2 reads the desc of
 * an ELF64 as 8 bytes, so an empty note follows to make the next 4 bytes 0
 * while keeping the note segment well-formed for strict parsers.
 */
        .section .note.pvh, "a", @note
        .p2align 2
        .long   4, 4, 18
        .asciz  "Xen"
        .long   pvh_start
        .long   0, 0, 0

        .section .note.GNU-stack, "", @progbits

        .data
        .p2align 4
        .globl  gdt
gdt:
        .quad   0
        .quad   0x00af9a000000ffff      /* 0x08 kernel code, 64-bit */
        .quad   0x00cf92000000ffff      /* 0x10 kernel data */
        .quad   0x00cff2000000ffff      /* 0x18 user data, DPL 3 */
        .quad   0x00affa000000ffff      /* 0x20 user code, 64-bit, DPL 3 */
        .quad   0, 0                    /* 0x28 TSS, filled in by boot.c */
        .quad   0x00cf9a000000ffff      /* 0x38 kernel code, 32-bit (AP start-up) */
        .fill   2 * (MAX_CPUS - 1), 8, 0 /* 0x40... the APs' TSSs, filled in by boot.c */
gdt_end:
        /* 32-bit lgdt reads limit + low 4 bytes of the base. */
gdt_desc:
        .word   gdt_end - gdt - 1
        .quad   gdt

        /* Zeroed by pvh_start: only the first entries are ever set. */
        .bss
        .p2align 12
        .globl  pml4, pdpt
pml4:   .skip   4096
pdpt:   .skip   4096

        /* Never zeroed: every byte used is written before it is read. */
        .section .noinit, "aw", @nobits
        .p2align 12
        .globl  pd
pd:     .skip   4096 * MAX_MAP_GB
        .p2align 4
        .skip   KSTACK_SIZE
        .globl  kstack_top
kstack_top:
        .skip   USTACK_SIZE
        .globl  ustack_top
ustack_top:
        /*
         * CPU n >= 1 has [ap_kstacks + (n - 1) * KSTACK_SIZE, + KSTACK_SIZE)
         * and the same in ap_ustacks: its stack tops are base + n * size.
         */
        .globl  ap_kstacks, ap_ustacks
ap_kstacks:
        .skip   KSTACK_SIZE * (MAX_CPUS - 1)
ap_ustacks:
        .skip   USTACK_SIZE * (MAX_CPUS - 1)

        .section .text.entry, "ax"
        .code32
        .globl  pvh_start
pvh_start:
        cli
        cld
        mov     %ebx, %esi              /* hvm_start_info, kept for C */
        lgdt    gdt_desc
        LOAD_DATA_SEGMENTS
        mov     $kstack_top, %esp

        mov     $__bss_start, %edi
        mov     $__bss_end, %ecx
        sub     %edi, %ecx
        shr     $2, %ecx
        xor     %eax, %eax
        rep stosl

        /* Identity-map 0-4 GiB; boot.c adds RAM above 4 GiB later. */
        movl    $(pdpt + PTE_P + PTE_RW + PTE_US), pml4
        xor     %ecx, %ecx
        mov     $(pd + PTE_P + PTE_RW + PTE_US), %eax
1:      mov     %eax, pdpt(, %ecx, 8)
        add     $4096, %eax
        inc     %ecx
        cmp     $4, %ecx
        jb      1b

        xor     %ecx, %ecx
        mov     $(PTE_P + PTE_RW + PTE_US + PTE_PS), %eax
2:      mov     %eax, pd(, %ecx, 8)
        movl    $0, pd + 4(, %ecx, 8)
        add     $0x200000, %eax
        inc     %ecx
        cmp     $2048, %ecx
        jb      2b

        ENTER_LONG_MODE
        ljmp    $KERNEL_CS, $start64

        .code64
start64:
        mov     $kstack_top, %esp
        mov     %esi, %edi
        call    boot_main
3:      cli
        hlt
        jmp     3b

/*
 * An AP's way from the SIPI (real mode, CS = AP_TRAMP_ADDR >> 4, IP = 0)
 * to ap_main: this block is copied to AP_TRAMP_ADDR by boot.c, so it uses
 * only offsets from its start; then protected mode on the shared GDT,
 * long mode on the BSP's page tables, and the kernel stack the BSP put in
 * ap_boot_rsp (APs are started one at a time).
 */
        .code16
        .globl  ap_tramp_start, ap_tramp_end
ap_tramp_start:
        cli
        mov     %cs, %ax
        mov     %ax, %ds
        lgdtl   ap_tramp_gdt - ap_tramp_start
        mov     %cr0, %eax
        or      $1, %eax
        mov     %eax, %cr0
        ljmpl   $KERNEL_CS32, $ap_start32
        .p2align 2
ap_tramp_gdt:
        .word   gdt_end - gdt - 1
        .long   gdt
ap_tramp_end:

        .code32
ap_start32:
        LOAD_DATA_SEGMENTS
        ENTER_LONG_MODE
        ljmp    $KERNEL_CS, $ap_start64

        .code64
ap_start64:
        mov     ap_boot_rsp(%rip), %rsp
        call    ap_main
6:      cli
        hlt
        jmp     6b

        .text
/* enter_user(fn, stack, arg): fn(arg) at CPL3 with interrupts off, for good. */
        .globl  enter_user
enter_user:
        pushq   $USER_DS
        pushq   %rsi
        pushq   $0x2                    /* RFLAGS: IF=0, IOPL=0 */
        pushq   $USER_CS
        pushq   %rdi
        mov     %edx, %edi
        iretq

/*
 * Vector 3, DPL 3. Only ports the service needs are touched and only rax,
 * rdx, rsi, rdi are clobbered; iretq restores the flags. The most frequent
 * services are tested first: every instruction here costs about 1 us.
 */
        .globl  svc_entry
svc_entry:
        cmp     $SVC_SLEEP, %eax
        je      svc_sleep
        cmp     $SVC_NAP, %eax
        je      svc_nap
        cmp     $SVC_PRINT, %eax
        jne     svc_exit
        test    %rsi, %rsi
        jz      2f
1:      mov     $UART_LSR, %dx
3:      in      %dx, %al
        test    $LSR_THRE, %al
        jz      3b
        mov     $UART_THR, %dx
        mov     (%rdi), %al
        out     %al, %dx
        inc     %rdi
        dec     %rsi
        jnz     1b
/*
 * CPL3 runs with interrupts off: a line out is where the power button
 * (power.c), waiting in the LAPIC's IRR, is taken in modes that never nap,
 * by napping once. Not "sti; nop; cli": under kvm-pvm, which emulates
 * CPL0, that window never lets a pending interrupt in; hlt does.
 */
2:      mov     $(LAPIC_BASE + LAPIC_IRR1), %edx
        testl   $(1 << (GED_IRQ_VECTOR - 32)), (%rdx)
        jnz     svc_sleep
        iretq

svc_sleep:
        sti                             /* the interrupt shadow covers hlt */
        hlt
        cli
        iretq

/* An AP has no PIT tick: arm its LAPIC timer (one-shot) and halt until it fires. */
svc_nap:
        mov     $(LAPIC_BASE + LAPIC_TICR), %edx
        mov     %esi, (%rdx)
        sti
        hlt
        cli
        iretq

svc_exit:
        cmp     $SVC_CALL, %eax
        je      svc_call
        cmp     $SVC_HALT, %eax
        je      4f
        mov     %esi, %eax
        mov     $DEBUG_EXIT_PORT, %dx
        out     %eax, %dx
4:      cli                             /* no isa-debug-exit: stop here */
        hlt
        jmp     4b

/*
 * A C function at CPL0 (device setup: rare, so it is tested last). The gate
 * promises to clobber only rax, rdx, rsi, rdi: the other caller-saved
 * registers are kept here. 40 bytes of frame plus these 40 leave rsp
 * 16-aligned at the call, as the ABI wants.
 */
svc_call:
        push    %rcx
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        mov     %rdi, %rax
        mov     %rsi, %rdi
        call    *%rax
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rcx
        iretq

/* PIT tick through the 8259 (ExtINT): no local APIC EOI is needed. */
        .globl  irq0_entry
irq0_entry:
        push    %rax
        mov     $0x20, %al
        out     %al, $0x20
        incq    g_ticks(%rip)
        pop     %rax
        iretq

/* An AP's LAPIC timer (the end of a nap): EOI, nothing else. */
        .globl  lapic_timer_entry
lapic_timer_entry:
        push    %rax
        mov     $(LAPIC_BASE + LAPIC_EOI), %eax
        movl    $0, (%rax)
        pop     %rax
        iretq

/*
 * virtio-net's level interrupt through an IOAPIC (net.c, irq=1), as a
 * driver takes it: acknowledge InterruptStatus (the line falls), count,
 * EOI the LAPIC, then the IOAPIC's EOI register (version 0x20), as Linux
 * does for a level interrupt the LAPIC took as edge-triggered.
 */
        .globl  vnet_irq_entry
vnet_irq_entry:
        push    %rax
        push    %rdx
        mov     g_vnet_irq_base(%rip), %rdx
        test    %rdx, %rdx
        jz      1f
        mov     0x60(%rdx), %eax        /* InterruptStatus */
        mov     %eax, 0x64(%rdx)        /* InterruptACK */
        lock incq g_vnet_irqs(%rip)
1:      mov     $(LAPIC_BASE + LAPIC_EOI), %eax
        movl    $0, (%rax)
        mov     g_vnet_irq_eoi(%rip), %rdx
        test    %rdx, %rdx
        jz      2f
        movl    $VNET_IRQ_VECTOR, (%rdx)
2:      pop     %rdx
        pop     %rax
        iretq

/* The ACPI GED's edge (power.c): ged_irq in C, then the LAPIC's EOI. */
        .globl  ged_irq_entry
ged_irq_entry:
        push    %rax
        push    %rcx
        push    %rdx
        push    %rsi
        push    %rdi
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        cld
        call    ged_irq
        mov     $(LAPIC_BASE + LAPIC_EOI), %eax
        movl    $0, (%rax)
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rdi
        pop     %rsi
        pop     %rdx
        pop     %rcx
        pop     %rax
        iretq

/* Masked 8259 lines can still raise a spurious IRQ 7/15: ignore. */
        .globl  ignore_entry
ignore_entry:
        iretq

/* Exception stubs, 16 bytes apart so boot.c can index them. */
.macro  EXC vec, err
        .p2align 4
.if \err == 0
        pushq   $0
.endif
        pushq   $\vec
        jmp     exc_common
.endm

        .p2align 4
        .globl  exc_stubs
exc_stubs:
        EXC 0, 0
        EXC 1, 0
        EXC 2, 0
        EXC 3, 0
        EXC 4, 0
        EXC 5, 0
        EXC 6, 0
        EXC 7, 0
        EXC 8, 1
        EXC 9, 0
        EXC 10, 1
        EXC 11, 1
        EXC 12, 1
        EXC 13, 1
        EXC 14, 1
        EXC 15, 0
        EXC 16, 0
        EXC 17, 1
        EXC 18, 0
        EXC 19, 0
        EXC 20, 0
        EXC 21, 1
        EXC 22, 0
        EXC 23, 0
        EXC 24, 0
        EXC 25, 0
        EXC 26, 0
        EXC 27, 0
        EXC 28, 0
        EXC 29, 1
        EXC 30, 1
        EXC 31, 0

exc_common:
        push    %rax
        push    %rcx
        push    %rdx
        push    %rbx
        push    %rbp
        push    %rsi
        push    %rdi
        mov     %rsp, %rdi
        cld
        and     $-16, %rsp
        call    trap_fatal
5:      cli
        hlt
        jmp     5b
