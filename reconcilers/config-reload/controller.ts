// What wakes the config-reload reconciler: a change of the daemon-config record, whose spec the
// file source writes on SIGHUP and when the watched file is edited, replaced or re-created.
import { controller } from '../../controllers/builder.ts';
import { DaemonConfigs } from '../../store/kinds/daemon-config.ts';

export const configReloadController = controller('config-reload').for(DaemonConfigs, { specChangesOnly: true }).workers(1);
