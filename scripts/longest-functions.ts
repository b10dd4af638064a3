// Lists the longest functions under a folder (default src/), by lines, to keep functions short.
// Usage: node scripts/longest-functions.ts [folder] [count]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const folder = process.argv[2] ?? 'src';
const count = Number(process.argv[3] ?? 10);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

interface Found { name: string; file: string; line: number; lines: number }

function functionName(node: ts.Node, file: ts.SourceFile): string {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) return node.name.getText(file);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText(file);
  return '(anonymous)';
}

const found: Found[] = [];
for (const path of sourceFiles(folder)) {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ name: functionName(node, file), file: path, line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}
found.sort((a, b) => b.lines - a.lines);
for (const f of found.slice(0, count)) console.log(`${String(f.lines).padStart(4)}  ${f.name}  ${f.file}:${f.line}`);
