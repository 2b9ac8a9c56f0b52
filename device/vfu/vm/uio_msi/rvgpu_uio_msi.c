// SPDX-License-Identifier: GPL-2.0
/*
 * rvgpu_uio_msi: the rvgpu PCI function (1234:5256) as a UIO device whose interrupt is its MSI
 * message, for the Linux guest test (device/vfu/vm/run-guest-smoke.sh).
 *
 * uio_pci_generic, which the guest test otherwise binds, has INTx only, and the Debian guest
 * kernel has no VFIO no-IOMMU mode; this is the smallest kernel part that lets user space (the
 * simulated OS's PCI board, simos/src/hal/pci.rs) take the function's message interrupt.
 * A message is an edge: the handler has nothing to mask or acknowledge at the function, so it
 * only counts the event for user space, which reads /dev/uioN as with uio_pci_generic. BARs
 * stay mapped from sysfs (resourceN), as the board does for either driver.
 *
 * Test-side only (GPL-2.0, as UIO's symbols require); it never reaches a shipped file.
 */
#include <linux/interrupt.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uio_driver.h>

#define RVGPU_VENDOR 0x1234
#define RVGPU_DEVICE 0x5256

struct rvgpu_uio {
	struct uio_info info;
};

/* Called by UIO's interrupt routine; returning IRQ_HANDLED makes UIO count the event. */
static irqreturn_t rvgpu_uio_handler(int irq, struct uio_info *info)
{
	return IRQ_HANDLED;
}

static int rvgpu_uio_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct rvgpu_uio *u;
	int err;

	err = pci_enable_device(pdev);
	if (err)
		return err;
	/* The function reaches guest memory (rings, fence values, the event write-back word). */
	pci_set_master(pdev);
	err = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI);
	if (err < 0)
		goto disable;
	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u) {
		err = -ENOMEM;
		goto vectors;
	}
	u->info.name = "rvgpu_uio_msi";
	u->info.version = "1";
	u->info.irq = pci_irq_vector(pdev, 0);
	u->info.irq_flags = 0;
	u->info.handler = rvgpu_uio_handler;
	err = uio_register_device(&pdev->dev, &u->info);
	if (err)
		goto free;
	pci_set_drvdata(pdev, u);
	dev_info(&pdev->dev, "rvgpu_uio_msi: MSI on irq %ld\n", u->info.irq);
	return 0;

free:
	kfree(u);
vectors:
	pci_free_irq_vectors(pdev);
disable:
	pci_disable_device(pdev);
	return err;
}

static void rvgpu_uio_remove(struct pci_dev *pdev)
{
	struct rvgpu_uio *u = pci_get_drvdata(pdev);

	/* UIO frees its interrupt handler before the vector goes. */
	uio_unregister_device(&u->info);
	pci_free_irq_vectors(pdev);
	pci_disable_device(pdev);
	kfree(u);
}

static const struct pci_device_id rvgpu_uio_ids[] = {
	{ PCI_DEVICE(RVGPU_VENDOR, RVGPU_DEVICE) },
	{ 0 }
};
MODULE_DEVICE_TABLE(pci, rvgpu_uio_ids);

static struct pci_driver rvgpu_uio_driver = {
	.name = "rvgpu_uio_msi",
	.id_table = rvgpu_uio_ids,
	.probe = rvgpu_uio_probe,
	.remove = rvgpu_uio_remove,
};
module_pci_driver(rvgpu_uio_driver);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rvgpu function as a UIO device with its MSI message (guest test only)");
