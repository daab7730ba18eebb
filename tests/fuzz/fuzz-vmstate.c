/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: one device section, the VMState loader on its own. The
 * input is a FULL section record without its type byte and section id:
 * counted idstr, instance, version, the device's fields and subsections,
 * then the footer (0x7e, section id 0). The target puts a valid stream
 * header and those five bytes in front, so every mutation lands in the
 * section. Seeds: each device section of the real streams, cut out by
 * scripts/fuzz-corpus.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "migration/qemu-file.h"
#include "migration/stream/savevm.h"
#include "migration/incoming/loadvm.h"
#include "fuzz.h"

#define QEMU_VM_SECTION_FULL 0x04

static GByteArray *stream;
static size_t prefix_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const uint8_t section[] = { QEMU_VM_SECTION_FULL, 0, 0, 0, 0 };
    QEMUFile *f;
    const uint8_t *hdr;
    size_t len;

    fuzz_machine_start((*argv)[0]);
    bql_unlock();
    /* The header the saver writes for this machine (magic, version, configuration). */
    f = qemu_file_new_buffer_output();
    qemu_savevm_state_header(f);
    hdr = qemu_file_buffer_data(f, &len);
    stream = g_byte_array_new();
    g_byte_array_append(stream, hdr, len);
    g_byte_array_append(stream, section, sizeof(section));
    prefix_len = stream->len;
    qemu_fclose(f);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    QEMUFile *f;
    Error *err = NULL;

    g_byte_array_set_size(stream, prefix_len);
    g_byte_array_append(stream, data, size);
    f = qemu_file_new_buffer_input(stream->data, stream->len);
    /* One section is never a whole stream: the load fails, after the section or in it. */
    assert(!qemu_loadvm_state(f, &err));
    fuzz_assert_printable("refused section", error_get_pretty(err));
    error_free(err);
    qemu_fclose(f);
    return 0;
}
