// The body of POST /containers/{id}/update, a container.UpdateConfig checked as the reference's
// decoder checks it (see go-json.ts). Resources is embedded in UpdateConfig, so Go names its
// fields straight under UpdateConfig; RestartPolicy is a struct of its own.
import type { z } from 'zod';
import { at, body, int, str, struct } from '../../lib/go-json.ts';
import { resourceFields } from '../../admission/containers/resources-schema.ts';

const uc = at('UpdateConfig', '');
const rp = at('RestartPolicy', 'RestartPolicy');

/** The schema, made on the first update (an idle daemon need not hold it). */
function buildUpdateSchema() {
  return struct(body('UpdateConfig'), 'container.UpdateConfig', {
    // Update applies some of these; Go decodes them all, so a value of the wrong type is refused all the same.
    ...resourceFields(uc),
    RestartPolicy: struct(uc('RestartPolicy'), 'container.RestartPolicy', {
      Name: str(rp('Name'), 'container.RestartPolicyMode'),
      MaximumRetryCount: int(rp('MaximumRetryCount'), 'int'),
    }),
  });
}

let updateSchema: ReturnType<typeof buildUpdateSchema> | undefined;

/** The schema (made once, on first use). */
export function updateBodySchema(): ReturnType<typeof buildUpdateSchema> {
  return (updateSchema ??= buildUpdateSchema());
}

export type UpdateBody = NonNullable<z.output<ReturnType<typeof buildUpdateSchema>>>;
