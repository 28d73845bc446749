import { drawFrom, WORDS, type Draw, type JsonValue } from './values.js';

/** A field a document template may ask for: its key and how its value is drawn. */
interface FieldKind {
  readonly key: string;
  readonly draw: (draw: Draw) => JsonValue;
}

const word = (key: string): FieldKind => ({ key, draw: (d) => d.pick(WORDS) });
const whole = (key: string, min: number, max: number): FieldKind => ({ key, draw: (d) => d.int(min, max) });
const flag = (key: string): FieldKind => ({ key, draw: (d) => d.int(0, 1) === 1 });
const words = (key: string): FieldKind => ({ key, draw: (d) => d.distinct(WORDS, d.int(1, 3)) });

/** One kind of document: what it describes and the fields a task of it may ask for (3 or 4 of them, drawn). */
export interface DocumentTemplate {
  readonly name: string;
  readonly entity: string;
  readonly fields: readonly FieldKind[];
}

const doc = (name: string, entity: string, fields: readonly FieldKind[]): DocumentTemplate => ({ name, entity, fields });

export const DOCUMENT_TEMPLATES: readonly DocumentTemplate[] = [
  doc('service', 'a network service', [word('name'), whole('port', 1000, 9999), flag('enabled'), whole('replicas', 1, 9), words('tags')]),
  doc('user', 'a user account', [word('username'), whole('age', 18, 90), flag('admin'), word('team'), words('groups')]),
  doc('book', 'a book', [word('title'), whole('year', 1900, 2025), whole('pages', 50, 900), word('author'), flag('available')]),
  doc('product', 'a product', [word('sku'), whole('price', 1, 500), flag('in_stock'), word('color'), words('labels')]),
  doc('server', 'a server', [word('host'), whole('cores', 1, 64), word('region'), flag('active'), whole('memory_gb', 1, 512)]),
  doc('event', 'a calendar event', [word('title'), whole('day', 1, 28), whole('hour', 0, 23), flag('public'), words('guests')]),
  doc('task', 'a to-do item', [whole('id', 1, 999), word('owner'), flag('done'), whole('priority', 1, 5), words('tags')]),
  doc('city', 'a city', [word('name'), whole('population', 1000, 900000), flag('capital'), word('country'), whole('founded', 800, 1990)]),
  doc('recipe', 'a recipe', [word('dish'), whole('minutes', 5, 180), flag('vegetarian'), whole('servings', 1, 12), words('ingredients')]),
  doc('car', 'a car', [word('make'), whole('year', 1980, 2025), flag('electric'), word('color'), whole('doors', 2, 5)]),
  doc('course', 'a course', [word('code'), whole('credits', 1, 10), word('teacher'), flag('online'), words('topics')]),
  doc('sensor', 'a sensor reading', [word('sensor'), whole('value', -40, 120), word('unit'), flag('calibrated'), whole('sequence', 1, 9999)]),
];

/** One generated document task: the prompt, the asked-for values, the reference reply. */
export interface DocumentTask {
  readonly template: string;
  readonly prompt: string;
  readonly values: Readonly<Record<string, JsonValue>>;
  readonly reference: string;
}

/** How a value is named in the prompt: strings quoted, lists as JSON lists, numbers and booleans as JSON writes them. */
const shown = (value: JsonValue): string => JSON.stringify(value);

export function documentTask(template: DocumentTemplate, random: () => number): DocumentTask {
  const draw = drawFrom(random);
  const fields = draw.distinct(template.fields, draw.int(3, 4));
  const values = Object.fromEntries(fields.map((field) => [field.key, field.draw(draw)]));
  const asked = Object.entries(values).map(([key, value]) => `"${key}" set to ${shown(value)}`);
  return {
    template: template.name,
    prompt: `Write a JSON object describing ${template.entity} with exactly these keys: ${asked.join(', ')}. Reply with the JSON object only.`,
    values,
    reference: JSON.stringify(values),
  };
}
