/** Public surface of the simulated Talos estate used by the end-to-end tests, the demo and the benchmarks. */
export { startSimulator, defaultTiming, Simulator, type SimulatorOptions, type SimulatorEnv } from './simulator.ts';
export { stagingShape, productionShape } from './shapes.ts';
export { writeInventory, type InventoryOptions } from './inventory.ts';
export { FaultController, type CannedOutput, type ClusterFaults, type FaultName } from './faults.ts';
export { CLIENT_VERSIONS, DEFAULT_CLIENT_VERSION, parseInstallerImage } from './versions.ts';
export { EMPTY_SCHEMATIC, schematicId } from './schematics.ts';
export { SimTerraform, DECLARED_INPUTS_FILE } from './terraform.ts';
export type {
  CallRecord,
  ClusterShape,
  DeclaredInputs,
  DeclaredNode,
  MachineStage,
  NodeShape,
  SelfEndpointHang,
  SimCluster,
  SimEvent,
  SimEventKind,
  SimNode,
  SimState,
  SimTiming,
} from './types.ts';
