export interface DashboardFile {
  bytes: number;
  imports: { path: string; kind: string }[];
  entry: string | null;
}
export interface DashboardBuild {
  outDir: string;
  entry: string;
  css: string | null;
  files: Record<string, DashboardFile>;
}
export function buildDashboard(opts?: { outDir?: string }): Promise<DashboardBuild>;
