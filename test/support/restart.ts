/**
 * Restarts one Durable Object from its storage: everything it held in memory is gone, its
 * storage stays. (`evictDurableObject` needs a workerd newer than the last toolchain for Node 20;
 * aborting the object is the harsher restart: nothing of it runs on the way down.)
 */
import { runInDurableObject } from "cloudflare:test";

export async function restartDurableObject(stub: DurableObjectStub<Rpc.DurableObjectBranded | undefined>): Promise<void> {
  // The abort fails the call that runs it; the next call starts the object afresh.
  await runInDurableObject(stub as DurableObjectStub<undefined>, (_instance, state) => state.abort("injected crash: restarted from storage")).catch(
    () => undefined,
  );
}
