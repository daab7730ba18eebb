/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The part of QEMU's object tree that management software reads with
 * qom-list and qom-get (system/control/qmp-qom.c): the machine, its CPUs and the
 * devices the command line created with an id.
 */
#ifndef SYSTEM_QOM_TREE_H
#define SYSTEM_QOM_TREE_H

/*
 * A device created with -device TYPE,id=ID: /machine/peripheral/ID.
 * False (with QEMU's error) if the id is taken. Main thread, while parsing.
 */
bool qom_peripheral_add(const char *id, const char *type, Error **errp);

#endif
